"""What the schedule rules share as data: a rule is a plan (`plan_*`, a frozen dataclass of every
knob it chose: tiles, packing, padding, lanes, prefetch, parallel loops) and the application of
that plan (`apply_*`), which reports the steps the schedule refused as `Refusal`s instead of
dropping them. Tests, benchmarks, `tessel show --schedules` and a tuner read the plans; a tuner
changes a plan and applies it (`dataclasses.replace`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

from tessel.ir.target import Target
from tessel.schedule.errors import ScheduleError

# The block annotation that marks a rule's packing stage (a copy of a parameter into the layout
# the kernel reads), TVM's name for it: tessel.graph.passes.layout_rewrite lifts the stages so
# marked out of kernels whose caller passes a constant, and packs the constant at compile time.
LAYOUT_REWRITE_PREPROC = "meta_schedule.layout_rewrite_preproc"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A step of a plan that the schedule refused: the primitive, the rule it would break (the
    ScheduleError's `rule`, such as "split.factors") and the message. A refusal costs speed,
    never correctness: the schedule is left as it was before the step."""

    primitive: str
    rule: str
    message: str

    @staticmethod
    def of(error: ScheduleError) -> Refusal:
        """The refusal that `error` reports."""
        message = error.message.removeprefix(f"{error.primitive}: ")
        return Refusal(error.primitive, error.rule or error.primitive, message)


@dataclass(frozen=True, slots=True)
class Applied:
    """A plan applied to a kernel: the plan, the blocks the rule scheduled (the others get the
    default's generic loops), and the steps the schedule refused, in order."""

    plan: object
    blocks: frozenset[str]
    refused: tuple[Refusal, ...] = ()


_REFUSALS: ContextVar[list[Refusal] | None] = ContextVar("tessel_rule_refusals", default=None)


@contextmanager
def recording_refusals() -> Iterator[list[Refusal]]:
    """Collect the refusals of the rule steps run inside the block (`refuse`, and every
    `try_step`): the list fills as they happen. Nested recordings each get their own."""
    refused: list[Refusal] = []
    token = _REFUSALS.set(refused)
    try:
        yield refused
    finally:
        _REFUSALS.reset(token)


def refuse(error: ScheduleError) -> None:
    """Record that the schedule refused a step (inside `recording_refusals`; else a no-op)."""
    refused = _REFUSALS.get()
    if refused is not None:
        refused.append(Refusal.of(error))


def rule_target(target: Target | str | None) -> Target:
    """The CPU a rule plans for: `target`, or this machine (`Target.detect()`, what the C
    compiler's -march=native builds for) when None, everywhere."""
    return host_target() if target is None else Target.of(target)


@cache
def host_target() -> Target:
    """This machine (Target.detect): what the C compiler's -march=native builds for."""
    return Target.detect()


def vector_lanes(target: Target, bits: int) -> int:
    """How many elements of `bits` bits one of the target's vector registers holds (float32:
    16 with AVX-512, 8 with AVX2), at least 1."""
    return max(1, target.vector_bytes * 8 // bits)
