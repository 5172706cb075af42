"""How many threads compiled kernels run on.

Tessel's C kernels run their parallel loops on a thread pool of their own
(tessel/codegen/c_parallel.py), which takes its team size from OpenMP's setting for the
calling thread: `set_threads(n)` sets it for the calling thread's next parallel loops
(`omp_set_num_threads`, which libgomp keeps per thread and shares with every library of the
process); `default_threads()` is the cores this process may run on, which is also what libgomp
starts with.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

from tessel.support.worker_processes import usable_cores


def default_threads() -> int:
    """The cores this process may run on (its affinity mask, as `taskset` sets it)."""
    return usable_cores()


@cache
def _libgomp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("gomp")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def set_threads(count: int) -> None:
    """Run the calling thread's next parallel kernels on `count` threads."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"threads must be a positive integer, got {count!r}")
    library = _libgomp()
    if library is not None:
        library.omp_set_num_threads(count)


def current_threads() -> int:
    """The team size the calling thread's next parallel kernel gets (1 without OpenMP)."""
    library = _libgomp()
    return int(library.omp_get_max_threads()) if library is not None else 1


__all__ = ["current_threads", "default_threads", "set_threads"]
