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


# Untimed calls at the start of every turn, for at least this long: the contender that ran the
# turn before may keep its idle threads spinning after its last call (onnxruntime's intra-op
# workers spin about 70 ms, `session.intra_op.allow_spinning`), and a 2-thread call made while
# they hold a core runs at about one thread's speed. Measured on SqueezeNet at 2 threads, the
# nine Tessel calls right after an onnxruntime turn took 7.3-8.1 ms, the tenth 4.3 ms. After the
# warm-up every contender is timed as a server calling it back to back would see it.
WARMUP_SECONDS = 0.15


def warm_up(call: Callable[[], object], seconds: float = WARMUP_SECONDS) -> None:
    """Call `call` (untimed) until `seconds` have passed, at least once."""
    start = time.perf_counter()
    call()
    while time.perf_counter() - start < seconds:
        call()


def timed_calls(call: Callable[[], object], runs: int) -> list[float]:
    """The warm-up (`warm_up`), then the wall times of `runs` calls: one turn of a contender."""
    warm_up(call)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


class LocalContender:
    """A callable timed in this process; a peer in another process has the same `turn`
    (peers.PeerWorker)."""

    def __init__(self, call: Callable[[], object]) -> None:
        self._call = call

    def turn(self, runs: int) -> list[float]:
        """The untimed warm-up, then the wall times of `runs` calls (`timed_calls`)."""
        return timed_calls(self._call, runs)


def interleaved_turns(contenders: Sequence, runs: int, turns: int = 5) -> list[float]:
    """The median of `runs` timed calls of each contender (anything with `turn(n)`), taken in
    `turns` turns of consecutive calls each, the contenders one after another in every turn,
    so a burst of load on a shared machine slows every contender alike instead of whichever
    ran during it. No idle pause between turns (on this VM a core left idle for a quarter
    second ran the next 2-thread kernel at 1.3x its speed instead of 1.9x): each turn starts
    with calls, untimed, for WARMUP_SECONDS, which outlast the idle spinning of the contender
    before. OpenBLAS's idle workers, which spin about 70 ms after a call, are also told to sleep
    sooner by the benchmarks (OPENBLAS_THREAD_TIMEOUT)."""
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
