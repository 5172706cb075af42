"""Scheduled kernels kept between compiles: LowerTE's PrimFunc for a primitive function, keyed
by the function's structural digest (types, attributes, constants' bytes, which variables are
the same one), the kernel's name, the target and Tessel's own source (`source_fingerprint`),
so a second compile of a model skips TOPI and the schedule rules, and an edit of Tessel never
reuses an old kernel."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable

from tessel.graph.expr import Function
from tessel.ir.structural import structural_digest
from tessel.ir.target import Target
from tessel.runtime import read_artifact, write_artifact
from tessel.support.fingerprint import source_fingerprint
from tessel.tir.function import PrimFunc

KERNEL_KIND = "kernels"


def cached_kernel(
    func: Function,
    name: str,
    target: Target | None,
    schedule: bool,
    make: Callable[[], PrimFunc],
) -> PrimFunc:
    """The kernel `make()` builds for `func`, from the cache when it was built before."""
    key = kernel_key(func, name, target, schedule)
    cached = read_artifact(KERNEL_KIND, source_fingerprint(), key)
    if cached is not None:
        try:
            kernel = pickle.loads(cached)  # our own cache, beside the objects we load anyway
        except Exception:  # a damaged or outdated entry is rebuilt and overwritten
            kernel = None
        if isinstance(kernel, PrimFunc):
            return kernel
    kernel = make()
    try:
        data = pickle.dumps(kernel)
    except RecursionError:  # pickle recurses in C: a very deep expression is not kept
        return kernel
    write_artifact(KERNEL_KIND, source_fingerprint(), key, data)
    return kernel


def kernel_key(func: Function, name: str, target: Target | None, schedule: bool) -> str:
    """sha256 of everything LowerTE's kernel for `func` depends on."""
    parts = (source_fingerprint(), repr(target), str(schedule), name, structural_digest(func))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


__all__ = ["KERNEL_KIND", "cached_kernel", "kernel_key"]
