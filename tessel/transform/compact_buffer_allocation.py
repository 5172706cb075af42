"""CompactBufferAllocation: shrink each block's alloc_buffer to the region the block touches
(TVM's pass of that name).

For a buffer a block allocates, the union of all its accesses in the block (loads, stores, the
declared regions of nested blocks) is relaxed over the loops inside the block; the bounds may
still depend on loops and parameters outside it. Where a dimension's extent is a constant (or
has a constant upper bound) smaller than the buffer's, the buffer gets that extent and every
access subtracts the region's start. Otherwise, and for buffers used through a match_buffer or
their data pointer, or with explicit strides or an element offset, the shape stays. Run after
PlanBufferAllocation, which puts each buffer in the innermost scope covering its uses: that is
what makes the touched region small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.arith.analyzer import Analyzer
from tessel.arith.dims import assume_symbol_bounds
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir.block import Block
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, SeqStmt
from tessel.transform.buffer_touch import BufferUses, collect_uses, relaxed_region
from tessel.transform.prim_func_pass import PrimFuncPass

_ZERO = builders.const(0)


@dataclass(frozen=True)
class CompactBufferAllocation(PrimFuncPass):
    """Give every alloc_buffer the shape of the region its block touches, when smaller."""

    name: ClassVar[str] = "compact_buffer_allocation"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        # A region of a shape symbol's extent compacts to the symbol's upper bound.
        analyzer = assume_symbol_bounds(Analyzer(), func.body)
        return with_changes(func, body=_Compactor(analyzer).visit(func.body))


class _Compactor(Mutator):
    """Compacts each block's buffers; the loops around it bound the region's start."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit_For(self, loop: For) -> Node:
        self.analyzer.bind(loop.loop_var, Range(loop.min, loop.extent), allow_override=True)
        return self.generic_visit(loop)

    def visit_Block(self, block: Block) -> Node:
        visited = self.generic_visit(block)
        assert isinstance(visited, Block)
        block = visited
        if not block.alloc_buffers:
            return block
        body = block.body if block.init is None else SeqStmt((block.init, block.body))
        uses = collect_uses(body, block.alloc_buffers)
        compacted: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]] = {}
        for buffer in block.alloc_buffers:
            plan = self._compact(uses, buffer)
            if plan is not None:
                compacted[buffer] = plan
        if not compacted:
            return block
        return _Shifter(compacted, self.analyzer).visit(block)

    def _compact(
        self, uses: BufferUses, buffer: Buffer
    ) -> tuple[Buffer, tuple[PrimExpr, ...]] | None:
        """The compacted buffer and the start of its region in the old one, or None to keep it."""
        if buffer in uses.opaque or not uses.accesses[buffer] or buffer.strides:
            return None
        if not builders.is_const_int(buffer.elem_offset, 0):
            return None
        region = relaxed_region(uses, buffer, None, self.analyzer)
        if region is None:
            return None
        shape, starts = [], []
        for (lo, hi), old_extent in zip(region, buffer.shape, strict=True):
            extent = self._constant_extent(lo, hi)
            if extent is not None and self._narrows(extent, old_extent):
                shape.append(builders.cast(extent, old_extent.dtype))
                starts.append(lo)
            else:
                shape.append(old_extent)
                starts.append(builders.cast(_ZERO, old_extent.dtype))
        if all(new is old for new, old in zip(shape, buffer.shape, strict=True)):
            return None
        return with_changes(buffer, shape=tuple(shape)), tuple(starts)

    def _narrows(self, extent: int, old_extent: PrimExpr) -> bool:
        """Whether a region of at most `extent` elements is a smaller buffer than `old_extent`.
        Against a symbolic extent (a tile's rows under a guarded tail: min(8, n - i * 8)) a
        small constant is taken even when the symbol may be smaller, as the accesses never
        leave the region: the tile's accumulators stay a tile, not a buffer of every row."""
        if not isinstance(old_extent, IntImm) and extent <= _SYMBOLIC_TILE_LIMIT:
            return True
        return self.analyzer.can_prove(extent < old_extent)

    def _constant_extent(self, lo: PrimExpr, hi: PrimExpr) -> int | None:
        extent = self.analyzer.simplify(hi - lo + 1)
        if isinstance(extent, IntImm):
            return extent.value
        bound = self.analyzer.const_int_bound(extent).max_value
        return bound if isinstance(bound, int) and abs(bound) < 2**31 else None


# The largest constant extent a dimension of symbolic extent is compacted to: a tile's, not a
# bound that only the index type gives.
_SYMBOLIC_TILE_LIMIT = 1024


class _Shifter(Mutator):
    """Swap compacted buffers in and subtract the region's start from every index."""

    def __init__(
        self, plans: dict[Buffer, tuple[Buffer, tuple[PrimExpr, ...]]], analyzer: Analyzer
    ) -> None:
        super().__init__()
        self.plans, self.analyzer = plans, analyzer

    def _shift(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        starts = self.plans[buffer][1]
        return tuple(
            i if builders.is_const_int(s, 0) else self.analyzer.simplify(i - s)
            for i, s in zip(indices, starts, strict=True)
        )

    def visit_Buffer(self, buffer: Buffer) -> Node:
        plan = self.plans.get(buffer)
        return buffer if plan is None else plan[0]

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        new = self.generic_visit(load)
        if load.buffer not in self.plans:
            return new
        assert isinstance(new, BufferLoad)
        return with_changes(new, indices=self._shift(load.buffer, new.indices))

    def visit_BufferStore(self, store: BufferStore) -> Node:
        new = self.generic_visit(store)
        if store.buffer not in self.plans:
            return new
        assert isinstance(new, BufferStore)
        return with_changes(new, indices=self._shift(store.buffer, new.indices))

    def visit_BufferRegion(self, region: BufferRegion) -> Node:
        new = self.generic_visit(region)
        if region.buffer not in self.plans:
            return new
        assert isinstance(new, BufferRegion)
        mins = self._shift(region.buffer, tuple(r.min for r in new.region))
        ranges = tuple(Range(m, r.extent) for m, r in zip(mins, new.region, strict=True))
        return with_changes(new, region=ranges)
