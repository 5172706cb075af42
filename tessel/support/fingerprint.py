"""A digest of Tessel's own source code, for cache keys: a cache of what Tessel computes (not
only of what the C compiler builds) is never reused by a Tessel that would compute something
else."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path


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


__all__ = ["source_fingerprint"]
