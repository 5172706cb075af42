"""Sampling primitives: perfect tilings of a loop and categorical choices (TVM's meta-schedule).

Each returns its decision; a given decision (from a replayed trace) is checked and reused, so a
trace replays to the same schedule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tessel.ir.expr import IntImm
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def perfect_tilings(extent: int, n: int, max_innermost_factor: int) -> list[tuple[int, ...]]:
    """Every `n`-tuple of positive factors whose product is `extent`, innermost bounded."""
    if n == 1:
        return [(extent,)] if extent <= max_innermost_factor else []
    tilings: list[tuple[int, ...]] = []
    for first in range(1, extent + 1):
        if extent % first == 0:
            tilings.extend(
                (first, *rest)
                for rest in perfect_tilings(extent // first, n - 1, max_innermost_factor)
            )
    return tilings


def sample_perfect_tile(
    sch: Schedule,
    rng: random.Random,
    loop_rv: LoopRV,
    n: int,
    max_innermost_factor: int,
    decision: Sequence[int] | None,
) -> list[int]:
    """`n` factors multiplying to the loop's extent, the innermost at most the bound."""
    loop = sch.loop(loop_rv, "sample_perfect_tile")

    def fail(rule: str, message: str) -> ScheduleError:
        return ScheduleError("sample_perfect_tile", rule, message, func=sch.func, culprits=(loop,))

    if not isinstance(loop.extent, IntImm):
        raise fail(
            "constant-extent",
            f"loop `{loop.loop_var.name}` has the non-constant extent {loop.extent}",
        )
    if n < 1 or max_innermost_factor < 1:
        raise fail(
            "positive",
            f"n and max_innermost_factor must be positive, got {n}, {max_innermost_factor}",
        )
    extent = loop.extent.value
    if decision is not None:
        decision = list(decision)
        if (
            len(decision) != n
            or math.prod(decision) != extent
            or decision[-1] > max_innermost_factor
        ):
            raise fail(
                "decision",
                f"the decision {decision} is not {n} factors of {extent} with the "
                f"innermost at most {max_innermost_factor}",
            )
        return decision
    tilings = perfect_tilings(extent, n, max_innermost_factor)
    if not tilings:  # an extent with no divisor small enough (cannot happen: 1 divides it)
        raise fail("no-tiling", f"no perfect tiling of {extent} into {n} factors")
    return list(rng.choice(tilings))


def sample_categorical(
    sch: Schedule,
    rng: random.Random,
    candidates: Sequence[int],
    probs: Sequence[float],
    decision: int | None,
) -> int:
    """The index of one of `candidates`, drawn with probabilities `probs` (the decision)."""

    def fail(rule: str, message: str) -> ScheduleError:
        return ScheduleError("sample_categorical", rule, message, func=sch.func)

    if not candidates or len(candidates) != len(probs):
        raise fail(
            "arity",
            f"needs as many probabilities as candidates, got {len(candidates)} "
            f"candidates and {len(probs)} probabilities",
        )
    if any(p < 0 for p in probs) or sum(probs) <= 0:
        raise fail(
            "probabilities",
            f"probabilities must be non-negative with a positive sum, got {list(probs)}",
        )
    if decision is not None:
        if not 0 <= decision < len(candidates):
            raise fail(
                "decision",
                f"the decision {decision} is not an index into {len(candidates)} candidates",
            )
        return decision
    return rng.choices(range(len(candidates)), weights=list(probs))[0]
