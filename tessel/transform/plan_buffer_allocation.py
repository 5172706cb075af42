"""PlanBufferAllocation: allocate each block's buffer in the innermost scope that covers its uses
(TVM's PlanAndUpdateBufferAllocationLocation).

A buffer a block allocates moves down to the lowest common ancestor (a loop or a block) of all
its accesses. Moving into a loop means a fresh buffer per iteration, which is only equivalent
when no value flows between iterations; so the buffer passes a loop only when different
iterations touch disjoint parts of it (then every element read in an iteration was written in
that same iteration, or never), or when the loop is parallel (its iterations cannot pass values
through memory without a race; where they overlap, a shared buffer would be the race). Under a
loop the buffer is allocated by a new opaque block (no iterators) wrapping the loop's body, as
TVM does. CompactBufferAllocation then shrinks it to what one iteration touches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import ClassVar

from tessel.arith import presburger
from tessel.arith.analyzer import Analyzer
from tessel.arith.presburger_read import NotPresburger
from tessel.ir import builders
from tessel.ir.expr import EQ, GT, LT, Or, Range, Var
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.support.dtype import bool_
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind, SeqStmt, Stmt
from tessel.transform.buffer_touch import BufferUses, Region, collect_uses, relaxed_region
from tessel.transform.prim_func_pass import PrimFuncPass

_TRUE = builders.const(True, bool_)


@dataclass(frozen=True)
class PlanBufferAllocation(PrimFuncPass):
    """Move every alloc_buffer down to the innermost block or loop that covers all its uses."""

    name: ClassVar[str] = "plan_buffer_allocation"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Planner().visit(func.body))


class _Planner(Mutator):
    """Top-down: plan a block's buffers, then the blocks below (which may pass them on)."""

    def visit_Block(self, block: Block) -> Node:
        placements = _placements(block)
        if placements:
            moved = {b for bufs in placements.values() for b in bufs}
            placer = _Placer(placements, moved)
            block = with_changes(
                block,
                alloc_buffers=tuple(b for b in block.alloc_buffers if b not in moved),
                body=placer.visit(block.body),
                init=None if block.init is None else placer.visit(block.init),
            )
        return self.generic_visit(block)


def _placements(block: Block) -> dict[int, list[Buffer]]:
    """For each scope node (by id) below `block`, the buffers of `block` to allocate there."""
    if not block.alloc_buffers:
        return {}
    body = block.body if block.init is None else SeqStmt((block.init, block.body))
    uses = collect_uses(body, block.alloc_buffers)
    analyzer = Analyzer()
    placements: dict[int, list[Buffer]] = {}
    for buffer in block.alloc_buffers:
        accesses = uses.accesses[buffer]
        if buffer in uses.opaque or not accesses:
            continue
        lca_path = _common_prefix([a.path for a in accesses])
        target = _lowest_safe_scope(uses, buffer, lca_path, analyzer)
        if target is not None:
            placements.setdefault(id(target), []).append(buffer)
    return placements


def _common_prefix(paths: list[tuple[Stmt, ...]]) -> tuple[Stmt, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        length = 0
        while length < min(len(prefix), len(path)) and prefix[length] is path[length]:
            length += 1
        prefix = prefix[:length]
    return prefix


def _lowest_safe_scope(
    uses: BufferUses, buffer: Buffer, lca_path: tuple[Stmt, ...], analyzer: Analyzer
) -> Stmt | None:
    """The deepest node of `lca_path` whose loops above it (itself included) may each give the
    buffer a fresh allocation per iteration; None to stay where it is."""
    target = None
    for node in lca_path:
        if isinstance(node, For) and not _fresh_per_iteration(uses, buffer, node, analyzer):
            break
        target = node
    return target


def _fresh_per_iteration(uses: BufferUses, buffer: Buffer, loop: For, analyzer: Analyzer) -> bool:
    """True if each iteration of `loop` may have its own `buffer`: different iterations touch
    disjoint parts of it, or `loop` is parallel. Iterations of a parallel loop cannot pass
    values through memory without a race, so with every use inside the loop an iteration reads
    only what it wrote; where they overlap (the halo rows that neighbouring row blocks of a
    fused conv chain both compute), a shared buffer would be written by two threads at once."""
    if loop.kind is ForKind.THREAD_BINDING and buffer.scope != "local":
        return False  # shared memory must be allocated outside the threads that share it
    if loop.kind is ForKind.PARALLEL:
        return True
    if builders.is_const_int(loop.extent, 1):
        return True
    region = relaxed_region(uses, buffer, loop, analyzer)
    if region is None:
        return False
    step = {loop.loop_var: loop.loop_var + 1}
    for lo, hi in region:
        next_lo, next_hi = substitute(lo, step), substitute(hi, step)
        if analyzer.can_prove(next_lo > hi) or analyzer.can_prove(next_hi < lo):
            return True
    return _distinct_iterations_disjoint(region, loop)


def _distinct_iterations_disjoint(region: Region, loop: For) -> bool:
    """isl's answer for a region no single dimension separates: a fused loop's iterations
    (`fused // 4` and `fused % 4` in two dimensions) are apart in one dimension or the other."""
    other = Var(f"{loop.loop_var.name}_other", loop.loop_var.dtype)
    moved = {loop.loop_var: other}
    apart = [EQ(loop.loop_var, other)]
    for lo, hi in region:
        apart += [GT(substitute(lo, moved), hi), LT(substitute(hi, moved), lo)]
    domain = Range(loop.min, loop.extent)
    try:
        return presburger.can_prove(reduce(Or, apart), {loop.loop_var: domain, other: domain})
    except NotPresburger:
        return False


class _Placer(Mutator):
    """Allocate the moved buffers at their new scopes; drop them from the declared regions of
    blocks they no longer live inside."""

    def __init__(self, placements: dict[int, list[Buffer]], moved: set[Buffer]) -> None:
        super().__init__()
        self.placements, self.moved = placements, moved
        self.in_scope: set[Buffer] = set()

    def _visit_in_scope(self, node: Stmt, buffers: list[Buffer]) -> Stmt:
        self.in_scope.update(buffers)
        try:
            result = self.visit(node)
            assert isinstance(result, Stmt)
            return result
        finally:
            self.in_scope.difference_update(buffers)

    def visit_For(self, loop: For) -> Node:
        buffers = self.placements.get(id(loop))
        if buffers is None:
            return self.generic_visit(loop)
        body = self._visit_in_scope(loop.body, buffers)
        scope = Block((), (), (), "", body, alloc_buffers=tuple(buffers))
        reads, writes = infer_access_regions(scope)
        scope = with_changes(scope, reads=reads, writes=writes)
        return with_changes(loop, body=BlockRealize((), _TRUE, scope))

    def visit_BlockRealize(self, realize: BlockRealize) -> Node:
        buffers = self.placements.get(id(realize), [])
        block = realize.block
        new_block = with_changes(
            block,
            alloc_buffers=(*block.alloc_buffers, *buffers),
            body=self._visit_in_scope(block.body, buffers),
            init=None if block.init is None else self._visit_in_scope(block.init, buffers),
            reads=self._kept(block.reads, buffers),
            writes=self._kept(block.writes, buffers),
        )
        return with_changes(realize, block=new_block)

    def _kept(
        self, regions: tuple[BufferRegion, ...], own: list[Buffer]
    ) -> tuple[BufferRegion, ...]:
        def keep(region: BufferRegion) -> bool:
            b = region.buffer
            return b not in self.moved or (b in self.in_scope and b not in own)

        kept = tuple(r for r in regions if keep(r))
        return regions if len(kept) == len(regions) else kept
