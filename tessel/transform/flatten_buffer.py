"""FlattenBuffer: make every buffer access physical, one index per physical axis.

Without axis separators a buffer has one physical axis, as C memory is flat: it gets a flattened
twin sharing its data variable, of shape `(flat extent,)`, no strides, elem_offset 0, and every
access `B[i, j]` becomes `B_flat[elem_offset + i * s0 + j * s1]`.

With axis separators (TVM's N-d physical memory, such as Hexagon's VTCM) the logical axes split
into groups, each flattened row-major into one physical axis: a buffer with k separators becomes
one of k + 1 physical axes (each extent its group's element count; separators 1..k, so every
physical axis is a group of its own and a second flattening changes nothing), and with shape
(4, 4, 4, 4) and separator 2, `B[i, j, k, l]` becomes `B[i * 4 + j, k * 4 + l]`. The backend
realises the axes (the C backend: a table of separately allocated chunks, codegen/c_alloc.py).
A separated buffer is dense inside its groups: strides other than the compact ones and a
non-zero elem_offset are refused, since a stride or an offset reaching across groups has no
meaning once the groups live in separate chunks.

An allocation's extents become its physical shape: one flat extent, or the physical shape of the
separated buffer declared over it, which every other view of that memory must share.
A root block (what a top-level `T.alloc_buffer` makes) may remain: it keeps allocating its
buffers, now physical, as TVM's FlattenBuffer keeps a block's `alloc_buffers`; any other block
is refused (run LowerOpaqueBlock first).
Parameter buffers in `buffer_map` keep their logical shape: that is the function's signature,
which the runtime checks. The physical twin of each parameter buffer the body uses is declared by
a `DeclBuffer` at the top of the body (docs/architecture.md §6: every view is declared before
use); a buffer that is already physical is its own twin.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from tessel.arith.analyzer import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.transform import PassContext
from tessel.tir.block import BlockRealize
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Allocate, AllocateConst, BufferStore, DeclBuffer, Stmt
from tessel.transform.buffer_layout import (
    allocation_size,
    compact_strides,
    physical_indices,
    physical_shape,
)
from tessel.transform.errors import LoweringError, require_no_blocks
from tessel.transform.prim_func_pass import PrimFuncPass

_ZERO = builders.const(0)

# The buffers through which a function reaches each data variable (declared or accessed).
_Views = dict[Var, dict[Buffer, None]]


@dataclass(frozen=True)
class FlattenBuffer(PrimFuncPass):
    """Rewrite buffer accesses and allocations into physical ones (flat, or one axis a group)."""

    name: ClassVar[str] = "flatten_buffer"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        root = _root_block(func.body)
        inner = func.body if root is None else root.block.body
        require_no_blocks(
            with_changes(func, body=inner),
            "flatten_buffer",
            "flatten_buffer.no-blocks",
            "run LowerOpaqueBlock first",
        )
        allocated = () if root is None else root.block.alloc_buffers
        flat_parameters = frozenset(
            b.data for b in func.buffer_map.values() if not b.axis_separators
        )
        flattener = _Flattener(_views_by_data(inner, allocated), flat_parameters)
        body = flattener.visit(inner)
        for param_buffer in reversed(list(func.buffer_map.values())):
            twin = flattener.flat_buffers.get(param_buffer)
            if twin is not None and twin is not param_buffer:
                body = DeclBuffer(twin, body)
        if root is None:
            return with_changes(func, body=body)
        # The root block stays, allocating the physical buffers (as TVM's FlattenBuffer does).
        alloc_buffers = _same_or(allocated, tuple(flattener.flat(b) for b in allocated))
        block = with_changes(root.block, alloc_buffers=alloc_buffers, body=body)
        return with_changes(func, body=with_changes(root, block=block))


def _root_block(body: Stmt) -> BlockRealize | None:
    """The function's root block (what a top-level `T.alloc_buffer` makes), else None: no
    iterators, no init, no match_buffers and no regions, so only its allocations need care."""
    if not isinstance(body, BlockRealize):
        return None
    block = body.block
    plain = not (block.iter_vars or block.match_buffers or block.reads or block.writes)
    if not plain or block.init is not None or not builders.is_const_int(body.predicate, 1):
        return None
    return body


def _views_by_data(body: Stmt, allocated: tuple[Buffer, ...] = ()) -> _Views:
    views: _Views = {buffer.data: {buffer: None} for buffer in allocated}
    for node in post_order(body):
        if isinstance(node, DeclBuffer | BufferLoad | BufferStore):
            views.setdefault(node.buffer.data, {})[node.buffer] = None
    return views


def flattened(buffer: Buffer) -> Buffer:
    """The physical buffer over the same data: one axis per axis group (1-D without separators)."""
    if buffer.axis_separators:
        _check_separated(buffer)
    shape = physical_shape(buffer)
    if _is_physical(buffer, shape):
        return buffer
    return Buffer(
        buffer.data,
        buffer.dtype,
        shape,
        buffer.name,
        (),
        _ZERO,
        tuple(range(1, len(shape))),
        buffer.data_alignment,
        buffer.offset_factor,
    )


def _is_physical(buffer: Buffer, shape: tuple[PrimExpr, ...]) -> bool:
    """True if `buffer` already has the physical form `flattened` would build."""
    return (
        not buffer.strides
        and builders.is_const_int(buffer.elem_offset, 0)
        and buffer.axis_separators == tuple(range(1, len(shape)))
        and len(shape) == len(buffer.shape)
        and all(a is b or structural_equal(a, b) for a, b in zip(shape, buffer.shape, strict=True))
    )


def _check_separated(buffer: Buffer) -> None:
    """A separated buffer's groups must be non-empty and in order, and dense (see the module)."""
    ndim, separators = len(buffer.shape), list(buffer.axis_separators)
    if separators != sorted(set(separators)) or not all(0 < s < ndim for s in separators):
        raise LoweringError(
            f"buffer `{buffer.name}` has axis separators {separators}; they must increase "
            f"strictly and lie in 1..{ndim - 1}, so that every physical axis has a logical one",
            rule="flatten_buffer.separators",
        )
    analyzer = Analyzer()
    if not _starts_at_zero(buffer, analyzer):
        raise LoweringError(
            f"buffer `{buffer.name}` has axis separators {separators} and the element offset "
            f"`{buffer.elem_offset}`; a separated buffer starts at the first element of each "
            "of its chunks",
            rule="flatten_buffer.separated-offset",
            hint="declare the buffer without elem_offset, or without axis separators",
        )
    if not _is_dense(buffer, analyzer):
        compact = [str(s) for s in compact_strides(buffer.shape)]
        raise LoweringError(
            f"buffer `{buffer.name}` has axis separators {separators} and the strides "
            f"{[str(s) for s in buffer.strides]}; a separated buffer is dense inside each group "
            f"(strides {compact}, or none)",
            rule="flatten_buffer.separated-strides",
            hint="drop the strides (storage_align) or the axis separators of this buffer",
        )


def _same_or(old: tuple[PrimExpr, ...], new: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    """`old` if `new` holds the same nodes, so an unchanged node stays the same object."""
    same = len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))
    return old if same else new


def _shape_text(shape: Iterable[PrimExpr]) -> str:
    return "[" + ", ".join(str(e) for e in shape) + "]"


class _Flattener(Mutator):
    def __init__(self, views: _Views, flat_parameters: frozenset[Var] = frozenset()) -> None:
        super().__init__()
        self.views = views
        # data of parameter buffers without axis separators: memory the caller gives as one chunk
        self.flat_parameters = flat_parameters
        self.flat_buffers: dict[Buffer, Buffer] = {}

    def flat(self, buffer: Buffer) -> Buffer:
        """The physical twin of `buffer` (the same one for every access)."""
        return self._flat(buffer)

    def _flat(self, buffer: Buffer) -> Buffer:
        if buffer not in self.flat_buffers:
            self.flat_buffers[buffer] = flattened(self._in_chunk(buffer))
        return self.flat_buffers[buffer]

    def _index(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return physical_indices(self._in_chunk(buffer), tuple(self.visit(i) for i in indices))

    def _in_chunk(self, buffer: Buffer) -> Buffer:
        """A separated view of a sub-region of a flat parameter (`T.match_buffer(A[i, 0:2,
        0:4], ..., axis_separators=[1])`) as a plain view: the caller's memory is one chunk, so
        the view's groups are rows of it, flattened as its source is (and read as the
        interpreter reads them); any other buffer as it is (an allocation's separated views
        make its chunks, and flattened() refuses one that starts inside a chunk)."""
        if not buffer.axis_separators or buffer.data not in self.flat_parameters:
            return buffer
        if not _is_sub_region(buffer):
            return buffer
        return with_changes(buffer, axis_separators=())

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        predicate = None if load.predicate is None else self.visit(load.predicate)
        return BufferLoad(
            self._flat(load.buffer),
            self._index(load.buffer, load.indices),
            predicate,
            span=load.span,
        )

    def visit_BufferStore(self, store: BufferStore) -> Node:
        predicate = None if store.predicate is None else self.visit(store.predicate)
        return BufferStore(
            self._flat(store.buffer),
            self.visit(store.value),
            self._index(store.buffer, store.indices),
            predicate,
            span=store.span,
        )

    def visit_DeclBuffer(self, decl: DeclBuffer) -> Node:
        return DeclBuffer(self._flat(decl.buffer), self.visit(decl.body), span=decl.span)

    def visit_Allocate(self, alloc: Allocate) -> Node:
        # The Allocate owns the memory (its views are DeclBuffers): its size is its extents',
        # laid out along the physical axes of the separated view declared over it, if any.
        view = self._separated_view(alloc.buffer_var)
        extents: tuple[PrimExpr, ...]
        if view is None:
            extents = (allocation_size(alloc.extents),)
        else:
            _check_allocation_holds(alloc, view)
            extents = self._flat(view).shape
        extents = _same_or(alloc.extents, extents)
        return with_changes(alloc, extents=extents, body=self.visit(alloc.body))

    def visit_AllocateConst(self, alloc: AllocateConst) -> Node:
        view = next((b for b in self.views.get(alloc.buffer_var, ()) if b.axis_separators), None)
        if view is not None:
            raise LoweringError(
                f"constant `{alloc.buffer_var.name}` is viewed as `{view.name}` with axis "
                f"separators {list(view.axis_separators)}; constants are flat arrays",
                rule="flatten_buffer.separated-constant",
                hint="remove the axis separators of the constant's buffer",
            )
        data = None if alloc.data is None else alloc.data.reshape(-1)
        extents = _same_or(alloc.extents, (allocation_size(alloc.extents),))
        return with_changes(alloc, extents=extents, data=data, body=self.visit(alloc.body))

    def _separated_view(self, data: Var) -> Buffer | None:
        """The first view of `data` with axis separators (None if none has any), after checking
        that every view of `data` has its physical shape and dtype."""
        views = list(self.views.get(data, ()))
        view = next((b for b in views if b.axis_separators), None)
        if view is None:
            return None
        shape = self._flat(view).shape
        for other in views:
            other_shape = self._flat(other).shape
            same = other.dtype == view.dtype and len(other_shape) == len(shape)
            if not (same and all(map(structural_equal, other_shape, shape))):
                raise LoweringError(
                    f"the memory of `{data.name}` is viewed as `{view.name}` ({view.dtype}, "
                    f"physical shape {_shape_text(shape)}) and as `{other.name}` "
                    f"({other.dtype}, physical shape {_shape_text(other_shape)}); every view "
                    "of memory with axis separators must have the same physical shape and dtype",
                    rule="flatten_buffer.separated-views",
                    hint="give every buffer over this memory the same axis separators and shape",
                )
        return view


def _starts_at_zero(buffer: Buffer, analyzer: Analyzer) -> bool:
    return analyzer.can_prove_equal(buffer.elem_offset, 0)


def _is_dense(buffer: Buffer, analyzer: Analyzer) -> bool:
    """No strides, or provably the compact ones."""
    compact = compact_strides(buffer.shape)
    return not buffer.strides or all(
        analyzer.can_prove_equal(s, c) for s, c in zip(buffer.strides, compact, strict=True)
    )


def _is_sub_region(buffer: Buffer) -> bool:
    """True for a view that may start inside its memory or skip elements (a matched region):
    an element offset or strides not provably those of a dense buffer at the start."""
    analyzer = Analyzer()
    return not (_starts_at_zero(buffer, analyzer) and _is_dense(buffer, analyzer))


def _check_allocation_holds(alloc: Allocate, view: Buffer) -> None:
    """A separated view must cover its allocation exactly: the chunks are cut from the view."""
    count, needed = allocation_size(alloc.extents), allocation_size(view.shape)
    if alloc.dtype == view.dtype and Analyzer().can_prove_equal(count, needed):
        return
    raise LoweringError(
        f"allocation `{alloc.buffer_var.name}` holds {count} elements of {alloc.dtype}, but its "
        f"view `{view.name}` with axis separators {list(view.axis_separators)} needs exactly "
        f"{needed} of {view.dtype}",
        rule="flatten_buffer.separated-allocation",
        hint="allocate the separated buffer with its own shape and dtype (T.alloc_buffer)",
    )
