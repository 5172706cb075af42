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


class LocalContender:
    """A callable timed in this process; a peer in another process has the same `turn`
    (peers.PeerWorker)."""

    def __init__(self, call: Callable[[], object]) -> None:
        self._call = call

    def turn(self, runs: int) -> list[float]:
        """One untimed warm-up call, then the wall times of `runs` calls."""
        self._call()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            self._call()
            times.append(time.perf_counter() - start)
        return times


def interleaved_turns(contenders: Sequence, runs: int, turns: int = 5) -> list[float]:
    """The median of `runs` timed calls of each contender (anything with `turn(n)`), taken in
    `turns` turns of consecutive calls each, the contenders one after another in every turn,
    so a burst of load on a shared machine slows every contender alike instead of whichever
    ran during it. No pause between turns: on this VM a core left idle for a quarter second
    ran the next 2-thread kernel at 1.3x its speed instead of 1.9x. OpenBLAS's idle workers,
    which spin about 70 ms after a call and would take a core from the next contender (a
    2-thread kernel waited a scheduler slice, 8 ms, at each call), are told to sleep sooner by
    the benchmarks instead (OPENBLAS_THREAD_TIMEOUT)."""
    per_turn = math.ceil(runs / turns)
    times: list[list[float]] = [[] for _ in contenders]
    while len(times[0]) < runs:
        for contender, measured in zip(contenders, times, strict=True):
            measured += contender.turn(min(per_turn, runs - len(measured)))
    return [statistics.median(measured) for measured in times]


def interleaved_medians(
    calls: Sequence[Callable[[], object]], runs: int, turns: int = 5
) -> list[float]:
    """`interleaved_turns` of callables timed in this process."""
    return interleaved_turns([LocalContender(call) for call in calls], runs, turns)


def model_medians_by_threads(
    models: dict[str, Callable[..., object]],
    feed: dict,
    runs: int,
    set_threads: Callable[[int], object],
    counts: Sequence[int] = (1, 2),
) -> dict[int, dict[str, float]]:
    """Median seconds of each compiled model called on `feed`, taking turns
    (`interleaved_medians`), at each thread count in `counts` (set by `set_threads`)."""
    result = {}
    for threads in counts:
        set_threads(threads)
        calls = [lambda m=m: m(**feed) for m in models.values()]
        result[threads] = dict(zip(models, interleaved_medians(calls, runs), strict=True))
    return result
