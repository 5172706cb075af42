"""A minimal default schedule for the kernels LowerTE builds, so they are not naive loop nests:
inline injective intermediate blocks, run the outermost loop of each nest in parallel and
vectorize the innermost one; GEMM-like blocks get a register tile (tessel.graph.schedule_gemm).
Every step is tried and skipped where the schedule refuses it
(a reduction loop, a block that cannot inline). The real rules come with issue 15
(`tessel.schedule.rules`), which replaces this file."""

from __future__ import annotations

from tessel.graph.schedule_conv import conv_padding, schedule_conv
from tessel.graph.schedule_gemm import schedule_gemm
from tessel.graph.schedule_reduction import schedule_row_reduction
from tessel.ir.expr import Call, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType
from tessel.tir.function import PrimFunc


def default_schedule(func: PrimFunc) -> PrimFunc:
    """`func` with injective intermediates inlined, GEMM-like blocks tiled, and each other loop
    nest parallel + vectorized."""
    sch = Schedule(func)
    _inline_injective(sch, keep=conv_padding(sch))
    done = {"root"}
    for name in block_names(sch.func):
        if name not in done and _exists(sch, name):  # a rule may have inlined a later block
            done |= (
                schedule_conv(sch, name)
                or schedule_gemm(sch, name)
                or schedule_row_reduction(sch, name)
            )
    for name in block_names(sch.func):
        if name not in done:
            _parallel_and_vectorize(sch, name)
    return sch.func


def _exists(sch: Schedule, name: str) -> bool:
    return name in block_names(sch.func)


def _inline_injective(sch: Schedule, keep: set[str]) -> None:
    outputs = {buffer.name for buffer in sch.func.buffer_map.values()}
    for name in block_names(sch.func):
        block = sch.block(sch.get_block(name)).block
        if name == "root" or name in keep or any(w.buffer.name in outputs for w in block.writes):
            continue
        if any(iv.iter_type != IterVarType.DATA_PAR for iv in block.iter_vars):
            continue
        if _calls_math(block) and len(sch.get_consumers(sch.get_block(name))) > 1:
            continue  # softmax's exp, read by the sum and the normalisation: computed once
        try:
            sch.compute_inline(sch.get_block(name))
        except ScheduleError:
            continue


def _calls_math(block: Block) -> bool:
    """Whether the block's body calls a math function (exp, erf, ...): costly to recompute."""
    return any(isinstance(node, Call) for node in post_order(block.body))


def _parallel_and_vectorize(sch: Schedule, name: str) -> None:
    """Fuse the leading spatial loops (all but an innermost one, kept to vectorize) into one
    parallel loop, so a batch of 2 still spreads over the cores; vectorize the innermost."""
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    spatial = _spatial_prefix(sch, block, loops)
    vector = loops[-1] if len(spatial) == len(loops) and len(loops) > 1 else None
    outer = [loop for loop in spatial if loop is not vector]
    try:
        if len(outer) > 1:
            outer = [sch.fuse(*outer)]
        if outer:
            sch.parallel(outer[0])
        if vector is not None:
            sch.vectorize(vector)
    except ScheduleError:
        pass  # keep what was applied; issue 15's rules handle the hard cases


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
