"""FlattenBuffer: make every buffer access one-dimensional, as C memory is.

Each buffer gets a flattened twin sharing its data variable: shape `(flat extent,)`, no strides,
elem_offset 0. Every access `B[i, j]` becomes `B_flat[elem_offset + i * s0 + j * s1]`, and an
allocation's extents become one flat extent. Parameter buffers in `buffer_map` keep their
multi-dimensional shape: that is the function's signature, which the runtime checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir.analysis.blocks import first_block
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Allocate, AllocateConst, BufferStore, DeclBuffer
from tessel.transform.buffer_layout import allocation_size, flat_extent, flat_index
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass

_ZERO = builders.const(0)


@dataclass(frozen=True)
class FlattenBuffer(PrimFuncPass):
    """Rewrite multi-dimensional buffer accesses and allocations into flat (1-D) ones."""

    name: ClassVar[str] = "flatten_buffer"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        _check_no_blocks(func)
        return with_changes(func, body=_Flattener().visit(func.body))


def _check_no_blocks(func: PrimFunc) -> None:
    block = first_block(func.body)
    if block is not None:
        raise LoweringError(
            f"flatten_buffer needs a function without blocks, but block `{block.name_hint}` "
            "remains; run LowerOpaqueBlock first",
            rule="flatten_buffer.no-blocks",
        )


def flattened(buffer: Buffer) -> Buffer:
    """The 1-D buffer over the same data that `buffer`'s flat indices address."""
    if buffer.axis_separators:
        raise LoweringError(
            f"buffer `{buffer.name}` has axis separators {list(buffer.axis_separators)}, which "
            "ask for multi-dimensional physical memory; the C target has only flat memory",
            rule="flatten_buffer.axis-separators",
            hint="remove the axis separators (set_axis_separator) for the C target",
        )
    return Buffer(
        buffer.data,
        buffer.dtype,
        (flat_extent(buffer),),
        buffer.name,
        (),
        _ZERO,
        (),
        buffer.data_alignment,
        buffer.offset_factor,
    )


class _Flattener(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.flat_buffers: dict[int, Buffer] = {}

    def _flat(self, buffer: Buffer) -> Buffer:
        key = id(buffer)
        if key not in self.flat_buffers:
            self.flat_buffers[key] = flattened(buffer)
        return self.flat_buffers[key]

    def _index(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return (flat_index(buffer, tuple(self.visit(i) for i in indices)),)

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        predicate = None if load.predicate is None else self.visit(load.predicate)
        return BufferLoad(
            self._flat(load.buffer), self._index(load.buffer, load.indices), predicate,
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
        # The Allocate owns the memory (its views are DeclBuffers): its size is its extents'.
        extents = (allocation_size(alloc.extents),)
        return with_changes(alloc, extents=extents, body=self.visit(alloc.body))

    def visit_AllocateConst(self, alloc: AllocateConst) -> Node:
        data = None if alloc.data is None else alloc.data.reshape(-1)
        return with_changes(
            alloc, extents=(allocation_size(alloc.extents),), data=data, body=self.visit(alloc.body)
        )
