"""Build artifacts other than shared objects (the C a module lowers to), kept by key in the
same cache directory as the objects, written atomically so that concurrent builds never read
half a file.

Artifacts live in `<cache>/<kind>/<version>/<key>`, `version` naming what made them (Tessel's
source fingerprint): the first write of a new version removes the other versions of that kind,
so editing or upgrading Tessel does not leave the old artifacts to pile up.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def default_cache_dir() -> Path:
    """Where compiled objects and artifacts are kept unless a build names another directory."""
    return Path.home() / ".cache" / "tessel"


def read_artifact(
    kind: str, version: str, key: str, cache_dir: str | Path | None = None
) -> bytes | None:
    """The bytes stored under `kind`/`version`/`key`, or None when there are none."""
    try:
        return (_kind_directory(kind, cache_dir) / version / key).read_bytes()
    except OSError:
        return None


def write_artifact(
    kind: str, version: str, key: str, data: bytes, cache_dir: str | Path | None = None
) -> None:
    """Store `data` under `kind`/`version`/`key`; a cache that cannot be written is only a lost
    speedup."""
    directory = _kind_directory(kind, cache_dir) / version
    try:
        if not directory.is_dir():
            _remove_versions(directory.parent)
            directory.mkdir(parents=True, exist_ok=True)
        write_atomically(directory / key, data)
    except OSError:
        pass


def _kind_directory(kind: str, cache_dir: str | Path | None) -> Path:
    return (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / kind


def _remove_versions(kind_directory: Path) -> None:
    if kind_directory.is_dir():
        for old in kind_directory.iterdir():
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)


def temporary_path(final: Path) -> Path:
    """A fresh empty file next to `final`, to be moved onto it with `os.replace`."""
    handle, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    os.close(handle)
    return Path(name)


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a reader sees the old file or the whole new one."""
    temporary = temporary_path(path)
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


__all__ = [
    "default_cache_dir", "read_artifact", "temporary_path", "write_artifact", "write_atomically",
]  # fmt: skip
