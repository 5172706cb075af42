"""How many threads compiled kernels run on.

Tessel's C kernels parallelise with OpenMP (libgomp): `set_threads(n)` sets the team size for
the calling thread's next parallel regions (`omp_set_num_threads`, which OpenMP keeps per
calling thread); `default_threads()` is the cores this process may run on, which is also what
libgomp starts with.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import cache


def default_threads() -> int:
    """The cores this process may run on (its affinity mask, as `taskset` sets it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


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
