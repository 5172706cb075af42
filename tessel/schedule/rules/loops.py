"""The default schedule's last rule, for a block no other rule claims (elementwise, broadcast,
layout transforms, reductions over other axes): the leading spatial loops (all but an innermost
one, kept to vectorize) fused into one parallel loop, so a batch of 2 still spreads over the
cores; the innermost loop vectorized, fused first with the unit loops inside it (a trailing
unit axis, as NCHW to NCHW1c has, left a vector of one lane and a division per element). Where
the vector is short (a block of channels) and the other loops leave enough parallel work, the
loop around the vector stays a plain loop inside the parallel one: a parallel iteration per
short vector recovered every index by division (an SE block's scale of an NCHW8c map ran 4.6x
slower so). As
every rule, a plan (`plan_loops`: LoopsPlan) and its application (`apply_loops`, which reports
the steps the schedule refused)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.rules.plan import Applied, recording_refusals, refuse
from tessel.schedule.rules.steps import try_step
from tessel.tir.block import IterVarType


@dataclass(frozen=True, slots=True)
class LoopsPlan:
    """The default loops of one block: its first `parallel` loops fused into the kernel's
    parallel loop (the others plain loops), and, when `vectorize`, its innermost loop
    vectorized after the `unit_loops` loops of extent 1 inside it are fused into it."""

    block: str
    parallel: int
    vectorize: bool
    unit_loops: int = 0


# A vector of at most this many elements is short: the loop around it stays serial.
SHORT_VECTOR = 16
# ... when the parallel loops still have at least this many iterations (work for the cores).
PARALLEL_ITERATIONS = 16


def plan_loops(sch: Schedule, name: str) -> LoopsPlan:
    """The default loops of the block `name`: every loop parallel but a vectorized innermost
    one (and the loop around a short vector) when all of them drive data-parallel iterators
    (and there are two or more), else the loops before the first that drives a reduction,
    parallel, and none vectorized."""
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    spatial = _spatial_prefix(sch, block, loops)
    if len(spatial) == len(loops) and len(loops) > 1:
        units = 0
        while units < len(loops) - 2 and _extent(sch, loops[-1 - units]) == 1:
            units += 1
        parallel = len(loops) - 1 - units
        vector = math.prod(_extent(sch, loop) for loop in loops[parallel:])
        iterations = math.prod(_extent(sch, loop) for loop in loops[: parallel - 1])
        if 0 < vector <= SHORT_VECTOR and parallel > 1 and iterations >= PARALLEL_ITERATIONS:
            parallel -= 1
        return LoopsPlan(name, parallel, vectorize=True, unit_loops=units)
    return LoopsPlan(name, len(spatial), vectorize=False)


def apply_loops(sch: Schedule, block: BlockRV, plan: LoopsPlan) -> Applied:
    """Apply `plan` to `block`; the steps applied before a refused one are kept."""
    with recording_refusals() as refused:
        loops = sch.get_loops(block)
        vector = None
        outer = loops[: plan.parallel]
        if plan.vectorize:
            vector = loops[-1]
            if plan.unit_loops:
                fused = try_step(lambda: sch.fuse(*loops[-1 - plan.unit_loops :]))
                if isinstance(fused, LoopRV):
                    loops, vector = [*loops[: -1 - plan.unit_loops], fused], fused
            outer = loops[: plan.parallel]
        try:
            if len(outer) > 1:
                outer = [sch.fuse(*outer)]
            if outer:
                sch.parallel(outer[0])
            if vector is not None:
                sch.vectorize(vector)
        except ScheduleError as error:
            refuse(error)
    return Applied(plan, frozenset({block.name}), tuple(refused))


def schedule_loops(sch: Schedule, name: str) -> Applied:
    """Plan and apply the default loops of the block `name`."""
    return apply_loops(sch, sch.get_block(name), plan_loops(sch, name))


def _extent(sch: Schedule, loop: LoopRV) -> int:
    """The loop's constant extent (0 when symbolic)."""
    return getattr(sch.loop(loop).extent, "value", 0)


def _spatial_prefix(sch: Schedule, block: BlockRV, loops: list[LoopRV]) -> list[LoopRV]:
    """The outermost loops that only drive data-parallel block iterators."""
    realize = sch.block(block)
    reduce_vars = {
        id(var)
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True)
        if iv.iter_type != IterVarType.DATA_PAR
        for var in _vars_in(value)
    }
    prefix = []
    for loop in loops:
        if id(loop.loop_var) in reduce_vars:
            break
        prefix.append(loop)
    return prefix


def _vars_in(expr: PrimExpr) -> list[Var]:
    return [node for node in post_order(expr) if isinstance(node, Var)]
