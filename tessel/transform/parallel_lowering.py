"""The per-function TensorIR passes of a module's functions, run in worker processes.

Each PrimFuncPass rewrites a function without looking at the others, so a module's functions
(a model's kernels: ResNet-50 has 58) can go through those passes at the same time, in up to
`jobs` processes (tessel.support.worker_processes); the module-level passes that follow run
once, here. Each function comes back pickled, with its variables and buffers still shared
where they were, so the module is the one serial lowering gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tessel.ir.module import IRModule
from tessel.ir.transform import PassContext
from tessel.support.worker_processes import map_in_workers
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass


def lower_functions_in_workers(
    mod: IRModule,
    passes: Sequence[PrimFuncPass],
    jobs: int,
    on_done: Callable[[], None] | None = None,
) -> IRModule | None:
    """`mod` with each PrimFunc through `passes`, in up to `jobs` processes; None when the
    module has one function or the workers could not do it (the caller runs the passes)."""
    names = [gv.name_hint for gv, func in mod.items() if isinstance(func, PrimFunc)]
    if len(names) < 2 or not passes:
        return None

    def lower_one(index: int) -> PrimFunc:
        func = mod[names[index]]
        ctx = PassContext()
        for pass_ in passes:
            func = pass_.transform(func, ctx)
        return func

    def report(_: int) -> None:
        if on_done is not None:
            on_done()

    lowered = map_in_workers(lower_one, len(names), jobs, report)
    if lowered is None:
        return None
    for name, func in zip(names, lowered, strict=True):
        mod = mod.with_function(name, func)
    return mod
