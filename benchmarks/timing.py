"""Timing shared by the benchmarks: medians of repeated calls after a warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(call: Callable[[], object], runs: int) -> float:
    """The median wall time of `runs` calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
