"""The steps the schedule rules share: each tries schedule primitives and keeps what the schedule
accepts (a refused step costs speed, never correctness, and is recorded: plan.Refusal), and the
block shapes they match."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tessel.ir.expr import Add, Cast, IntImm, Mul, PrimExpr
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.rules.plan import Applied, refuse
from tessel.tir.block import Block
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore

T = TypeVar("T")
P = TypeVar("P")


def try_step(step: Callable[[], T]) -> T | bool:
    """The step's result (True for None), or False when the schedule refuses it (the refusal
    recorded: tessel.schedule.rules.plan.recording_refusals)."""
    try:
        result = step()
    except ScheduleError as error:
        refuse(error)
        return False
    return True if result is None else result


def uncast(expr: PrimExpr) -> PrimExpr:
    """`expr` without an outer cast."""
    return expr.value if isinstance(expr, Cast) else expr


def is_accumulation(store: BufferStore) -> bool:
    """Whether `store` is `C[idx] = C[idx] + X * Y` (each side possibly cast)."""
    value = store.value
    if not isinstance(value, Add) or not isinstance(uncast(value.b), Mul):
        return False
    acc = value.a
    return (
        isinstance(acc, BufferLoad)
        and acc.buffer is store.buffer
        and all(a is b for a, b in zip(acc.indices, store.indices, strict=True))
    )


def is_plain_nest(sch: Schedule, block: BlockRV) -> bool:
    """Whether each loop above `block` binds one iterator, in order (as create_prim_func builds)."""
    realize = sch.block(block)
    loops = sch.get_loops(block)
    if len(loops) != len(realize.iter_values):
        return False
    loop_vars = [sch.loop(loop).loop_var for loop in loops]
    return all(v is lv for v, lv in zip(realize.iter_values, loop_vars, strict=True))


def parallel_fused(sch: Schedule, loops: list[LoopRV]) -> LoopRV:
    """The loops fused into one parallel loop; if fusing is refused, the first runs in parallel
    and the last is returned."""
    try:
        fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    except ScheduleError as error:
        refuse(error)
        try_step(lambda: sch.parallel(loops[0]))
        return loops[-1]
    try_step(lambda: sch.parallel(fused))
    return fused


def vectorized_init(
    sch: Schedule, block: BlockRV, loop: LoopRV, lanes: int | None = None
) -> BlockRV | bool:
    """decompose_reduction of `block` above `loop`, the init's innermost loop vectorized (in
    unrolled vectors of `lanes`, where given); the init block, or False when the schedule
    refuses."""
    init = try_step(lambda: sch.decompose_reduction(block, loop))
    if not isinstance(init, BlockRV):
        return init
    inner = sch.get_loops(init)[-1]
    if lanes:
        vectorize_by(sch, inner, lanes)
    else:
        try_step(lambda: sch.vectorize(inner))
    return init


def vectorize_by(sch: Schedule, loop: LoopRV, lanes: int) -> None:
    """Vectorize `loop`; a loop of several vectors of `lanes` splits into unrolled vectors
    first, so that each vector (of accumulators, of partial results) stays in a register."""
    extent = sch.loop(loop).extent
    if isinstance(extent, IntImm) and extent.value > lanes and extent.value % lanes == 0:
        split = try_step(lambda: sch.split(loop, [None, lanes]))
        if split is not False:
            outer, loop = split
            try_step(lambda: sch.unroll(outer))
    try_step(lambda: sch.vectorize(loop))


def inline_consumer(sch: Schedule, producer: BlockRV) -> None:
    """Inline the single injective consumer of `producer` (bias, batch norm, relu, a residual
    add) into it, so the output is written once."""
    consumers = try_step(lambda: sch.get_consumers(producer)) or []
    if len(consumers) == 1:
        try_step(lambda: sch.reverse_compute_inline(consumers[0]))


def move_write_back(sch: Schedule, write_back: BlockRV, loop: LoopRV) -> bool:
    """Inline the single injective consumer of a tile's write-back (bias, an activation, a
    residual add) into it, then move it under `loop`, so the tile is stored once, epilogue
    included; whether it moved."""
    inline_consumer(sch, write_back)
    return try_step(lambda: sch.reverse_compute_at(write_back, loop)) is not False


def local_tile(sch: Schedule, block: BlockRV, loop: LoopRV) -> BlockRV | None:
    """The block's output as a scope-local tile (cache_write: accumulators the C compiler
    keeps in registers) whose write-back moves under `loop` (move_write_back); the write-back,
    or None where the schedule refused the tile or the move."""
    write_back = try_step(lambda: sch.cache_write(block, 0, "local"))
    if not isinstance(write_back, BlockRV) or not move_write_back(sch, write_back, loop):
        return None
    return write_back


def consumer_under(sch: Schedule, block: BlockRV, loop: LoopRV) -> BlockRV | None:
    """Move the single consumer of `block` (bias, batch norm, relu) under `loop`, its innermost
    loop vectorized; the consumer if it moved."""
    consumers = try_step(lambda: sch.get_consumers(block)) or []
    if len(consumers) != 1:
        return None
    consumer = consumers[0]
    if try_step(lambda: sch.reverse_compute_at(consumer, loop)) is False:
        return None
    try_step(lambda: sch.vectorize(sch.get_loops(consumer)[-1]))
    return consumer


def plan_and_apply(
    sch: Schedule,
    name: str,
    plan: Callable[[Block], P | None],
    apply: Callable[[Schedule, BlockRV, P], Applied],
) -> Applied | None:
    """A rule on the block `name`: `plan` it, then `apply` the plan; None (nothing changed)
    where the rule does not match or the block's loops are not the plain nest TOPI builds."""
    block = sch.get_block(name)
    chosen = plan(sch.block(block).block)
    if chosen is None or not is_plain_nest(sch, block):
        return None
    return apply(sch, block, chosen)
