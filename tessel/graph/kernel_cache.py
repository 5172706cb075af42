"""Scheduled kernels kept between compiles: LowerTE's PrimFunc for a primitive function, keyed
by the function's structural digest (types, attributes, constants' bytes, which variables are
the same one), the kernel's name, the target and Tessel's own source (`source_fingerprint`),
so a second compile of a model skips TOPI and the schedule rules, and an edit of Tessel never
reuses an old kernel. The kernels a compile does not find are built in worker processes
(tessel.support.worker_processes), as many as the compile's `jobs`: each kernel's TOPI and
schedule rules depend on its function alone."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from tessel.graph.expr import Function
from tessel.ir.structural import structural_digest
from tessel.ir.target import Target
from tessel.runtime import read_artifact, write_artifact
from tessel.support.fingerprint import source_fingerprint
from tessel.support.worker_processes import map_in_workers
from tessel.tir.function import PrimFunc

KERNEL_KIND = "kernels"


@dataclass(frozen=True)
class KernelRequest:
    """A kernel to find or build: `make()` builds the PrimFunc for the graph function `func`."""

    func: Function
    name: str
    target: Target | None
    schedule: bool
    make: Callable[[], PrimFunc]


def cached_kernels(
    requests: Sequence[KernelRequest],
    jobs: int = 1,
    on_done: Callable[[int], None] | None = None,
) -> list[PrimFunc]:
    """The kernel of each request, from the cache when it was built before, else built (in
    up to `jobs` worker processes when there are several) and stored; `on_done(i)` as kernel
    i is ready."""
    keys = [kernel_key(r.func, r.name, r.target, r.schedule) for r in requests]
    kernels: list[PrimFunc | None] = [_load(key) for key in keys]
    missing = [i for i, kernel in enumerate(kernels) if kernel is None]
    for i, kernel in enumerate(kernels):
        if kernel is not None and on_done is not None:
            on_done(i)

    def build(j: int) -> PrimFunc:
        i = missing[j]
        kernel = requests[i].make()
        _store(keys[i], kernel)
        return kernel

    def report(j: int) -> None:
        if on_done is not None:
            on_done(missing[j])

    made = map_in_workers(build, len(missing), jobs, report)
    if made is None:  # one kernel, one core, or no workers: built here
        made = []
        for j in range(len(missing)):
            made.append(build(j))
            report(j)
    for i, kernel in zip(missing, made, strict=True):
        kernels[i] = kernel
    return cast(list[PrimFunc], kernels)  # every one found or made


def _load(key: str) -> PrimFunc | None:
    """The kernel stored under `key`; None when there is none or it cannot be read back."""
    cached = read_artifact(KERNEL_KIND, source_fingerprint(), key)
    if cached is None:
        return None
    try:
        kernel = pickle.loads(cached)  # our own cache, beside the objects we load anyway
    except Exception:  # a damaged or outdated entry is rebuilt and overwritten
        return None
    return kernel if isinstance(kernel, PrimFunc) else None


def _store(key: str, kernel: PrimFunc) -> None:
    """Keep `kernel` under `key` (a kernel too deep for pickle is not kept)."""
    try:
        data = pickle.dumps(kernel)
    except RecursionError:  # pickle recurses in C: a very deep expression is not kept
        return
    write_artifact(KERNEL_KIND, source_fingerprint(), key, data)


def kernel_key(func: Function, name: str, target: Target | None, schedule: bool) -> str:
    """sha256 of everything LowerTE's kernel for `func` depends on."""
    parts = (source_fingerprint(), repr(target), str(schedule), name, structural_digest(func))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


__all__ = ["KERNEL_KIND", "KernelRequest", "cached_kernels", "kernel_key"]
