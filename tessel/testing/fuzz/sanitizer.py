"""AddressSanitizer for the fuzzer's worker processes: the runtime to preload, the environment."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

from tessel.runtime.compiler import find_compiler

# Leak checking would report Python's own allocations at exit; the fuzzer looks for bad accesses.
# No stack is recorded at each malloc and free (malloc_context_size=0): the whole Python worker
# runs on ASan's allocator, and unwinding at every allocation made a case 2.5x slower. A report
# still gives the stack of the bad access; only the "allocated by" stack is left out.
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=0:halt_on_error=1:malloc_context_size=0"


@cache
def asan_runtime() -> str | None:
    """The path of the C compiler's ASan runtime (`-print-file-name=libasan.so`), or None."""
    try:
        result = subprocess.run(
            [*find_compiler(), "-print-file-name=libasan.so"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    path = result.stdout.strip()
    return (
        path
        if result.returncode == 0 and Path(path).is_absolute() and Path(path).exists()
        else None
    )


def sanitizer_env(sanitize: str | None) -> dict[str, str]:
    """The environment for a worker: this one, plus the preloaded runtime under a sanitizer."""
    env = dict(os.environ)
    if sanitize is None:
        return env
    runtime = asan_runtime()
    if runtime is None:
        raise RuntimeError(
            "AddressSanitizer's runtime (libasan.so) was not found for the C compiler"
        )
    env["LD_PRELOAD"] = runtime
    env["ASAN_OPTIONS"] = ASAN_OPTIONS
    return env
