"""Independent pieces of a compile (each kernel's schedule, each kernel's TensorIR passes) run
in forked worker processes, as many as the compile's `jobs` (by default the cores this process
may use).

Python runs one thread of Python at a time, so the pieces go to processes. They are forked:
a worker inherits the caller's memory, so the work and its inputs (whole IR modules) are not
pickled on the way in, and only each piece's result is pickled on the way back. Any failure
(no `fork` on this platform, a process that may not have children, a piece that raises, a
worker that dies) gives None, and the caller does the work itself: the parallel path is only
ever faster, and a real error is raised where it happens, in the caller, with its traceback.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from tessel.support.errors import UserError

# The piece of work the forked workers run, set by `map_in_workers` just before it forks them
# (a forked worker sees the caller's memory as it was at the fork).
_WORK: Callable[[int], Any] | None = None


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, as `taskset` sets it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def compile_jobs(jobs: Any = None) -> int:
    """How many processes a compile uses: `jobs`, or the usable cores when it is None; a
    UserError for anything but a positive integer or None."""
    if jobs is None:
        return usable_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UserError(
            f"jobs must be a positive integer or None, got {jobs!r}", rule="compile.jobs"
        )
    return jobs


def map_in_workers(
    work: Callable[[int], Any],
    count: int,
    jobs: int,
    on_done: Callable[[int], None] | None = None,
) -> list[Any] | None:
    """[work(0), ..., work(count - 1)], computed in up to `jobs` forked processes, with
    `on_done(i)` called in this process as result i arrives. None if they could not all be
    computed there: the caller then computes them itself."""
    global _WORK
    if jobs < 2 or count < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    results: list[Any] = [None] * count
    _WORK = work
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, count), mp_context=context) as pool:
            futures = {pool.submit(_run, i): i for i in range(count)}
            for future in as_completed(futures):
                ok, value = future.result()
                if not ok:
                    for pending in futures:
                        pending.cancel()
                    return None
                index = futures[future]
                results[index] = value
                if on_done is not None:
                    on_done(index)
    except Exception:  # no children allowed (a daemon process), a worker that died, a pickle
        return None
    finally:
        _WORK = None
    return results


def _run(index: int) -> tuple[bool, Any]:
    """In a worker: piece `index`, or (False, None) if it raised (the caller redoes it)."""
    assert _WORK is not None
    try:
        return True, _WORK(index)
    except Exception:
        return False, None
