"""Timing shared by the benchmarks: medians of repeated calls after a warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(call: Callable[[], object], runs: int) -> float:
    """The median wall time of `runs` calls (after one warm-up call)."""
    return interleaved_medians([call], runs)[0]


def interleaved_medians(calls: Sequence[Callable[[], object]], runs: int,
                        block: int = 5) -> list[float]:  # fmt: skip
    """The median wall time of `runs` calls of each of `calls` (after one warm-up call each),
    taken in turns of `block` calls: on a shared machine a burst of load then slows every
    contender alike instead of whichever ran during it, while each still runs a few calls in a
    row with its data in cache, as a model served in a loop does."""
    for call in calls:
        call()
    times: list[list[float]] = [[] for _ in calls]
    while len(times[0]) < runs:
        for call, measured in zip(calls, times, strict=True):
            for _ in range(min(block, runs - len(measured))):
                start = time.perf_counter()
                call()
                measured.append(time.perf_counter() - start)
    return [statistics.median(measured) for measured in times]
