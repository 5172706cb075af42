"""Timing shared by the benchmarks: medians of repeated calls after a warm-up."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(call: Callable[[], object], runs: int) -> float:
    """The median wall time of `runs` calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(
    calls: Sequence[Callable[[], object]], runs: int, turns: int = 5
) -> list[float]:
    """The median wall time of `runs` calls of each of `calls`, taken in `turns` turns of
    consecutive calls each, so a burst of load on a shared machine slows every contender alike
    instead of whichever ran during it. Each turn starts with an untimed warm-up call. No pause
    between turns: on this VM a core left idle for a quarter second ran the next 2-thread
    kernel at 1.3x its speed instead of 1.9x. OpenBLAS's idle workers, which spin about 70 ms
    after a call and would take a core from the next contender (a 2-thread kernel waited a
    scheduler slice, 8 ms, at each call), are told to sleep sooner by the benchmarks instead
    (OPENBLAS_THREAD_TIMEOUT)."""
    per_turn = math.ceil(runs / turns)
    times: list[list[float]] = [[] for _ in calls]
    while len(times[0]) < runs:
        for call, measured in zip(calls, times, strict=True):
            call()
            for _ in range(min(per_turn, runs - len(measured))):
                start = time.perf_counter()
                call()
                measured.append(time.perf_counter() - start)
    return [statistics.median(measured) for measured in times]
