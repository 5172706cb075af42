"""Default schedules: what a kernel gets when nobody wrote a schedule for it (TVM needs hours of
tuning for this; Tessel applies rules, in milliseconds). Injective intermediate blocks are
inlined (except a math-heavy block read twice, such as softmax's exp), then each block goes to
the first rule that matches it: conv2d (tessel.schedule.rules.conv), GEMM-like contractions
(tessel.schedule.rules.gemm), row reductions (tessel.schedule.rules.reduction), window
reductions such as pooling (tessel.schedule.rules.window); any other nest gets its outer
spatial loops fused into one parallel loop and its innermost loop vectorized
(tessel.schedule.rules.loops). Every rule is a plan and its application
(tessel.schedule.rules.plan); a step the schedule refuses (a reduction loop, a block that
cannot inline) is skipped and reported: a refusal costs speed, never correctness."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import Call
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.schedule import Schedule, ScheduleError
from tessel.schedule.recording import check_still_well_formed
from tessel.schedule.rules.anchor_chain import (
    chain_operands,
    conv_chain,
    gemm_chain,
    schedule_anchor_chain,
)
from tessel.schedule.rules.conv import conv_padding, schedule_conv
from tessel.schedule.rules.conv_nchwc import schedule_conv_nchwc
from tessel.schedule.rules.gemm import accumulator_rows, gemm_columns, schedule_gemm
from tessel.schedule.rules.loops import schedule_loops
from tessel.schedule.rules.plan import Applied, host_target, rule_target
from tessel.schedule.rules.reduction import schedule_row_reduction
from tessel.schedule.rules.window import schedule_window_reduction
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType
from tessel.tir.builtin import call_pure_extern_op
from tessel.tir.function import PrimFunc


@dataclass(frozen=True)
class ScheduleReport:
    """A kernel's default schedule and the rules' plans applied to it, in the order applied:
    what `tessel show --schedules` prints, and what a tuner starts from."""

    schedule: Schedule
    applied: tuple[Applied, ...]


def default_schedule(func: PrimFunc, target: Target | str | None = None) -> Schedule:
    """The default schedule of `func`: injective intermediates inlined, then each block given
    to the first rule that matches it (conv2d, GEMM-like, row reduction, window reduction), any
    other nest made parallel and vectorized. Every step is a schedule primitive, so `.trace`
    shows (and replays) them all and `.func` is the scheduled function. `target` (None: this
    machine, which the C compiler builds for) sizes the register tiles by its vector registers
    and the vectors by its width."""
    return schedule_with_plans(func, target).schedule


def schedule_with_plans(func: PrimFunc, target: Target | str | None = None) -> ScheduleReport:
    """`default_schedule`, with the plan each rule chose and the steps the schedule refused."""
    cpu = rule_target(target)
    # The rules' steps are not checked one by one (verifying after every primitive took 39% of
    # the CPU that scheduling ResNet-50 took): the result is checked once, and the schedule
    # handed back checks each step a user or tuner adds to it.
    sch = Schedule(func, verify=False)
    applied = _apply_rules(sch, func, cpu)
    if sch.func is not func:
        check_still_well_formed("the default schedule", sch.func)
    sch.verify = True
    return ScheduleReport(sch, applied)


def _apply_rules(sch: Schedule, func: PrimFunc, cpu: Target) -> tuple[Applied, ...]:
    """Schedule every block of `sch` by the first rule that takes it; the rules' records."""
    if _calls_a_runtime(func):
        # Each element is a call of the string or random-number runtime: string records have
        # no vectors and the string heap is per thread, so these loops stay serial and scalar.
        return ()
    chain = gemm_chain(sch) or conv_chain(sch)
    _inline_injective(sch, keep=conv_padding(sch) | chain_operands(sch, chain))
    done = {"root"}
    applied: list[Applied] = []
    if chain:
        applied.append(schedule_anchor_chain(sch, chain, cpu))
        done |= applied[-1].blocks
    for name in block_names(sch.func):
        if name not in done and _exists(sch, name):  # a rule may have inlined a later block
            record = (
                schedule_conv_nchwc(sch, name, cpu)
                or schedule_conv(sch, name, cpu)
                or schedule_gemm(sch, name, cpu)
                or schedule_row_reduction(sch, name, cpu)
                or schedule_window_reduction(sch, name)
            )
            if record is not None:
                applied.append(record)
                done |= record.blocks
    for name in block_names(sch.func):
        if name not in done:
            applied.append(schedule_loops(sch, name))
    return tuple(applied)


def _calls_a_runtime(func: PrimFunc) -> bool:
    """Whether `func` holds a string tensor or draws random numbers (ONNX's string and random
    operators, whose elements call tessel/codegen/c_strings.py and c_random.py)."""
    buffers = [*func.buffer_map.values()]
    for node in post_order(func.body):
        if isinstance(node, Block):
            buffers += node.alloc_buffers
        elif isinstance(node, Call) and node.op is call_pure_extern_op and _is_random(node):
            return True
    return any(b.dtype.is_string for b in buffers)


def _is_random(call: Call) -> bool:
    return str(getattr(call.args[0], "value", "")).startswith("tessel_random_")


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


__all__ = [
    "ScheduleReport",
    "accumulator_rows",
    "default_schedule",
    "gemm_columns",
    "host_target",
    "schedule_with_plans",
]
