"""transform_layout: give a buffer a new layout everywhere in the function
(docs/architecture.md §5).

Every access `A[idx]` becomes `A'[index_map(idx)]`, every region is mapped to the box that holds
its image, and the buffer is replaced where it is declared (a parameter, changing the signature,
or a block's alloc_buffers). When the map is not surjective the new elements are padding; where
their value is written or assumed is decided in `layout_padding`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.layout_assumptions import function_assumptions
from tessel.schedule.state import walk_with_ancestors
from tessel.support.errors import UserError
from tessel.tir import builtin
from tessel.tir.block import Block
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore, For

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


@dataclass(frozen=True)
class LayoutChange:
    """What one layout transformation did: the buffers, the map, its inverse and the padding.

    `padding` and `pad` are over `inverse.initial_indices` (the new buffer's indices); `pad` is
    None when the padding is unspecified (`T.undef()`) or there is none.
    """

    old: Buffer
    new: Buffer
    index_map: IndexMap
    inverse: IndexMap
    padding: PrimExpr
    pad: PrimExpr | None

    @property
    def has_padding(self) -> bool:
        """Some new element is no old element's image."""
        return not builders.is_const_int(self.padding, 0)


# -- arguments -------------------------------------------------------------------------------


def resolve_buffer(sch: Schedule, primitive: str, rv: BlockRV, spec: Any) -> Buffer:
    """The buffer `spec` names: `("read"|"write", i)` of the block, a name, or a Buffer."""
    block = sch.block(rv, primitive).block
    if isinstance(spec, tuple | list) and len(spec) == 2 and spec[0] in ("read", "write"):
        regions = block.reads if spec[0] == "read" else block.writes
        if not isinstance(spec[1], int) or not 0 <= spec[1] < len(regions):
            raise ScheduleError(
                primitive,
                "buffer-index",
                f"block `{block.name_hint}` has {len(regions)} {spec[0]} buffers; "
                f"{spec[1]!r} is not one of them",
                func=sch.func,
                culprits=(block,),
            )
        return regions[spec[1]].buffer
    candidates = [r.buffer for r in (*block.reads, *block.writes)] + function_buffers(sch.func)
    for buffer in candidates:
        if buffer is spec or (isinstance(spec, str) and buffer.name == spec):
            return buffer
    raise ScheduleError(
        primitive,
        "unknown-buffer",
        f"no buffer {spec!r} in block `{block.name_hint}` or the function; give "
        '("read" | "write", index), a buffer name, or a Buffer',
        func=sch.func,
        culprits=(block,),
    )


def function_buffers(func: PrimFunc) -> list[Buffer]:
    """The function's parameter buffers, then every block-allocated buffer."""
    found = list(func.buffer_map.values())
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, Block):
            found.extend(node.alloc_buffers)
    return found


def as_index_map(
    sch: Schedule, primitive: str, index_map: Any, ndim: int, index_dtype: str = "int32"
) -> IndexMap:
    """`index_map` as an IndexMap over `ndim` indices of `index_dtype` (the buffer's or the
    block's: a callable is traced with fresh Vars of it, an IndexMap retyped to it)."""
    try:
        imap = (
            index_map.with_index_dtype(index_dtype)
            if isinstance(index_map, IndexMap)
            else IndexMap.from_func(index_map, ndim=ndim, index_dtype=index_dtype)
        )
    except (UserError, TypeError) as err:
        raise ScheduleError(
            primitive, "index-map", f"cannot build the index map: {err}", func=sch.func
        ) from err
    if len(imap.initial_indices) != ndim:
        raise ScheduleError(
            primitive,
            "index-map-arity",
            f"the index map takes {len(imap.initial_indices)} indices but the "
            f"buffer has {ndim} dimensions",
            func=sch.func,
        )
    return imap


def plan_change(
    sch: Schedule,
    primitive: str,
    old: Buffer,
    imap: IndexMap,
    pad_value: Any,
    assume_injective: bool,
) -> LayoutChange:
    """The new buffer, the inverse, the padding predicate and the pad value, or ScheduleError."""
    assumptions = function_assumptions(sch.func)
    try:
        new_shape = imap.map_shape(old.shape, assumptions)
        inverse, padding = _inverse_and_padding(imap, old.shape, assumptions)
    except UserError as err:
        rule = (
            "not-injective" if err.rule == "index_map.not-injective" else "index-map-not-invertible"
        )
        raise ScheduleError(
            primitive,
            rule,
            f"the map {imap} cannot relayout `{old.name}` of shape {_shape_text(old)}: "
            f"{err.message}",
            func=sch.func,
            hint=err.hint,
        ) from err
    new = with_changes(
        old, shape=tuple(new_shape), strides=(), axis_separators=tuple(imap.axis_separators)
    )
    pad = pad_expression(sch, primitive, old, pad_value, inverse.initial_indices)
    if pad is not None:  # a pad value reading the buffer reads it in the new layout too
        # an expression stays an expression
        pad = LayoutRewriter(old, new, imap.map_indices).visit(pad)  # type: ignore[assignment]
    change = LayoutChange(old, new, imap, inverse, padding, pad)
    if change.has_padding and pad_value is None and not assume_injective:
        raise ScheduleError(
            primitive,
            "padding-needs-pad-value",
            f"the map {imap} pads `{old.name}` from {_shape_text(old)} to "
            f"{_shape_text(new)} (padding where `{padding}`), but no pad_value "
            "says what the padding holds",
            func=sch.func,
            hint="pass pad_value=<value or lambda of the new indices>, or "
            "assume_injective_transform=True for unspecified padding (T.undef())",
        )
    return change


def _inverse_and_padding(
    imap: IndexMap, shape: Sequence[PrimExpr], assumptions: Sequence[PrimExpr]
) -> tuple[IndexMap, PrimExpr]:
    """The map's inverse and its padding predicate; a map over a symbolic shape whose padding
    isl cannot compute (`y * n + w`, `i // n`) is taken only as a bijection, with no padding."""
    try:
        return imap.non_surjective_inverse(shape, assumptions)
    except UserError as err:
        if err.rule != "index_map.padding-unknown":
            raise
    return imap.inverse(shape, assumptions), builders.const(False, "bool")


def _shape_text(buffer: Buffer) -> str:
    return "(" + ", ".join(str(e) for e in buffer.shape) + ")"


def pad_expression(
    sch: Schedule, primitive: str, buffer: Buffer, pad_value: Any, new_vars: Sequence[Var]
) -> PrimExpr | None:
    """The pad value as an expression over the new indices, checked (None: unspecified)."""
    if pad_value is None:
        return None
    value = pad_value
    if isinstance(value, IndexMap):
        value = _index_map_value(sch, primitive, value, new_vars)
    elif callable(value):
        value = value(*new_vars)
    if isinstance(value, float) and buffer.dtype.is_integer and not value.is_integer():
        _bad_pad(sch, primitive, buffer, f"the float {value}")
    if primitive == "transform_layout" and not _python_number_fits(value, buffer):
        # TVM takes a Python int as the buffer's type only on an integer buffer, a float only
        # on a float one; otherwise as int32/float32, which its type check then refuses.
        _bad_pad(sch, primitive, buffer, f"the Python {type(value).__name__} {value!r}")
    value = (
        builders.convert(value)
        if isinstance(value, PrimExpr)
        else _constant(sch, primitive, buffer, value)
    )
    if builtin.is_undef(value):
        return None
    if value.dtype != buffer.dtype:
        _bad_pad(sch, primitive, buffer, f"`{value}` of type {value.dtype}")
    others = sorted(
        {
            n.buffer.name
            for n in post_order(value)
            if isinstance(n, BufferLoad) and n.buffer is not buffer
        }
    )
    if others:
        raise ScheduleError(
            primitive,
            "pad-value-reads-other-buffer",
            f"the pad value `{value}` of `{buffer.name}` reads {others}; a pad value "
            "may read only the buffer being transformed",
            func=sch.func,
        )
    return value


def _python_number_fits(value: Any, buffer: Buffer) -> bool:
    """A Python bool, int or float pad value has the buffer's kind of type (other values are
    checked as expressions)."""
    if isinstance(value, bool):
        return buffer.dtype.is_bool
    if isinstance(value, int):
        return buffer.dtype.is_integer
    if isinstance(value, float):
        return buffer.dtype.is_float
    return True


def _constant(sch: Schedule, primitive: str, buffer: Buffer, value: Any) -> PrimExpr:
    if not isinstance(value, int | float | bool):
        _bad_pad(sch, primitive, buffer, repr(value))
    return builders.const(value, buffer.dtype)


def _index_map_value(
    sch: Schedule, primitive: str, value: IndexMap, new_vars: Sequence[Var]
) -> Any:
    if len(value.final_indices) != 1 or len(value.initial_indices) != len(new_vars):
        raise ScheduleError(
            primitive,
            "pad-value-arity",
            f"a pad value map must take the {len(new_vars)} new indices and give "
            f"one value; {value} does not",
            func=sch.func,
        )
    return value.map_indices(tuple(new_vars))[0]


def _bad_pad(sch: Schedule, primitive: str, buffer: Buffer, what: str) -> None:
    raise ScheduleError(
        primitive,
        "pad-value-dtype",
        f"pad_value {what} does not have the type of `{buffer.name}`, {buffer.dtype}",
        func=sch.func,
        hint=f"give a {buffer.dtype} value, e.g. T.{buffer.dtype}(0)",
    )


# -- rewriting the function ------------------------------------------------------------------


def rewrite_function(func: PrimFunc, change: LayoutChange) -> PrimFunc:
    """`func` with every access, region and declaration of the old buffer in the new layout."""
    # a PrimFunc stays a PrimFunc
    return LayoutRewriter(change.old, change.new, change.index_map.map_indices).visit(func)  # type: ignore[return-value]


class LayoutRewriter(Mutator):
    """Replace `old` by `new`, mapping each index tuple by `map_indices` (simplified under the
    enclosing loop and block-iterator ranges)."""

    def __init__(
        self,
        old: Buffer,
        new: Buffer,
        map_indices: Callable[[tuple[PrimExpr, ...]], tuple[PrimExpr, ...]],
    ) -> None:
        super().__init__()
        self.old, self.new, self.map_indices = old, new, map_indices
        self.analyzer = Analyzer()

    def indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        """The new buffer's indices for an access at `indices` (already visited)."""
        return tuple(self.analyzer.simplify(i) for i in self.map_indices(indices))

    def visit_Buffer(self, buffer: Buffer) -> Node:
        return self.new if buffer is self.old else self.visit_memoized(buffer)

    def visit_For(self, loop: For) -> Node:
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent), allow_override=True)
        return self.generic_visit(loop)

    def visit_Block(self, block: Block) -> Node:
        for iv in block.iter_vars:
            self.analyzer.bind(iv.var, iv.dom, allow_override=True)
        return self.generic_visit(block)

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        if load.buffer is not self.old:
            return self.generic_visit(load)
        visited = tuple(self.visit(i) for i in load.indices)
        return BufferLoad(self.new, self.indices(visited))  # type: ignore[arg-type]  # exprs

    def visit_BufferStore(self, store: BufferStore) -> Node:
        if store.buffer is not self.old:
            return self.generic_visit(store)
        visited = tuple(self.visit(i) for i in store.indices)
        # visited values are expressions
        return BufferStore(self.new, self.visit(store.value), self.indices(visited))  # type: ignore[arg-type]

    def visit_BufferRegion(self, region: BufferRegion) -> Node:
        if region.buffer is not self.old:
            return self.generic_visit(region)
        return BufferRegion(self.new, self.region(region.region))

    def region(self, ranges: Sequence[Range]) -> tuple[Range, ...]:
        """The box of the new buffer holding the image of the box `ranges` (clamped to it)."""
        if all(builders.is_const_int(r.extent, 1) for r in ranges):
            return tuple(
                Range(i, builders.const(1, i.dtype))
                for i in self.indices(tuple(r.min for r in ranges))
            )
        corner = [Var(f"r{k}", r.min.dtype) for k, r in enumerate(ranges)]
        domain = {v: Range(r.min, r.extent) for v, r in zip(corner, ranges, strict=True)}
        mapped = self.map_indices(tuple(corner))
        return tuple(
            self._bounds(e, domain, extent)
            for e, extent in zip(mapped, self.new.shape, strict=True)
        )

    def _bounds(self, expr: PrimExpr, domain: dict[Var, Range], extent: PrimExpr) -> Range:
        values = self.analyzer.int_set(expr, domain)
        zero, top = builders.const(0, extent.dtype), builders.sub(extent, 1)
        lo = zero if values.min_value is None else builders.max_value(values.min_value, zero)
        hi = top if values.max_value is None else builders.min_value(values.max_value, top)
        lo = self.analyzer.simplify(lo)
        return Range(lo, self.analyzer.simplify(builders.add(builders.sub(hi, lo), 1)))


def simplify_indices(node: Node, analyzer: Analyzer, buffer: Buffer | None = None) -> Node:
    """`node` with the indices of its accesses (to `buffer`, or to any buffer) simplified."""
    return _IndexSimplifier(analyzer, buffer).visit(node)


class _IndexSimplifier(Mutator):
    def __init__(self, analyzer: Analyzer, buffer: Buffer | None) -> None:
        super().__init__()
        self.analyzer, self.buffer = analyzer, buffer

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        # a load stays a load
        return self._simplified(self.generic_visit(load))  # type: ignore[arg-type]

    def visit_BufferStore(self, store: BufferStore) -> Node:
        # a store stays a store
        return self._simplified(self.generic_visit(store))  # type: ignore[arg-type]

    def _simplified(self, access: BufferLoad | BufferStore) -> Node:
        if self.buffer is not None and access.buffer is not self.buffer:
            return access
        return with_changes(
            access, indices=tuple(self.analyzer.simplify(i) for i in access.indices)
        )
