"""Digests for cache keys: of Tessel's own source code, so a cache of what Tessel computes (not
only of what the C compiler builds) is never reused by a Tessel that would compute something
else; and of arrays, exactly (dtype, shape and bytes)."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import numpy as np


@cache
def source_fingerprint() -> str:
    """sha256 over the path and bytes of every Python file of the installed `tessel` package."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def array_digest(array: np.ndarray) -> str:
    """sha256 of an array's dtype, shape and elements in row-major order."""
    array = np.asarray(array)
    digest = hashlib.sha256(f"{array.dtype.str} {array.shape}\0".encode())
    digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


__all__ = ["array_digest", "source_fingerprint"]
