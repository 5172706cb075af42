"""Time a 1024x1024x1024 float32 matmul built unscheduled and scheduled, against NumPy.

Run as `python benchmarks/matmul_schedule.py [--n 1024] [--runs 5] [--show-c]`. The kernel is
`C[i, j] += A[i, k] * B[k, j]` with an init block. The schedule tiles i and j with `split`,
orders the loops `i0, j0, k, i1, j1` with `reorder` (so the innermost loop walks rows of B and
C contiguously), caches C in a `local` buffer with `cache_write`, moves the copy-back into the
tile with `reverse_compute_at` (when that primitive exists), vectorizes the innermost j and runs
the outer i in parallel. Each time is the median of several calls on the same arrays; NumPy's
`A @ B` (BLAS) is measured in the same run. Results are checked against NumPy.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_seconds

import tessel
from tessel.driver import generate_c_source
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.tir.function import PrimFunc

TILE_I, TILE_J = 8, 64


def matmul(n: int) -> PrimFunc:
    """The n x n x n float32 matmul with an init block."""

    @T.prim_func
    def kernel(
        A: T.Buffer((n, n), "float32"),
        B: T.Buffer((n, n), "float32"),
        C: T.Buffer((n, n), "float32"),
    ):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return kernel


def schedule(func: PrimFunc) -> tuple[PrimFunc, list[str]]:
    """The tiled, cached, vectorized and parallel schedule; and the steps that did not apply."""
    sch = Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, TILE_I])
    j0, j1 = sch.split(j, factors=[None, TILE_J])
    sch.reorder(i0, j0, k, i1, j1)
    copy = sch.cache_write(block, 0, "local")
    skipped = []
    try:
        sch.reverse_compute_at(copy, j0)
        sch.vectorize(sch.get_loops(copy)[-1])
    except (AttributeError, NotImplementedError, ScheduleError) as err:
        reason = f"{type(err).__name__}: {err}".split("\n")[0]
        skipped.append(f"reverse_compute_at of the C_local copy: {reason}")
    sch.vectorize(j1)
    sch.parallel(i0)
    return sch.func, skipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--show-c", action="store_true", help="print the scheduled kernel's C source"
    )
    args = parser.parse_args()
    n = args.n

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    expected = a @ b

    plain = matmul(n)
    scheduled, skipped = schedule(plain)
    if args.show_c:
        print(generate_c_source(scheduled))
    rows = []
    for label, func in (("unscheduled", plain), ("scheduled", scheduled)):
        module = tessel.build(func)
        c = np.zeros((n, n), dtype=np.float32)
        seconds = median_seconds(lambda m=module, c=c: m(a, b, c), args.runs)
        np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3 * np.sqrt(n))
        rows.append((label, seconds))
    rows.append(("numpy (A @ B)", median_seconds(lambda: a @ b, args.runs)))

    flops = 2.0 * n**3
    print(f"matmul {n}x{n}x{n} float32, median of {args.runs} runs")
    print(f"{'variant':<16}{'time (ms)':>12}{'GFLOP/s':>10}")
    for label, seconds in rows:
        print(f"{label:<16}{seconds * 1e3:>12.2f}{flops / seconds / 1e9:>10.2f}")
    (_, t_plain), (_, t_sched), (_, t_numpy) = rows
    print(f"speedup scheduled / unscheduled: {t_plain / t_sched:.1f}x")
    print(f"scheduled / numpy time ratio: {t_sched / t_numpy:.1f}x")
    for note in skipped:
        print(f"not applied: {note}")


if __name__ == "__main__":
    main()
