"""Time the 127x127x127 float32 matmul against the same matmul padded to 128x128x128.

Run as `python benchmarks/padded_matmul.py [--runs 50] [--show-c]`. Both variants start from the
RFC 77 thread's kernel and get the same schedule: the split-and-fuse trick (loops of
128 guarded by `T.where(... < 127)`), then `reorder(i, k, j)`, `split(j, [None, 16])`,
`vectorize` of the inner j and `parallel` of i. The padded variant also transforms A, B and C
to 128x128 with `pad_value=0`; the pipeline's OverComputePadding pass then drops the guards, so
its inner loop is branch-free. Its arguments are padded outside the timed call (the caller
pre-transforms them, as the graph level does). Times are medians; NumPy's `A @ B` on the
127x127 arrays is measured in the same run as the reference.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import median_seconds

import tessel
from tessel.driver import generate_c_source
from tessel.schedule import Schedule
from tessel.script import tir as T


@T.prim_func
def matmul(
    A: T.Buffer((127, 127), "float32"),
    B: T.Buffer((127, 127), "float32"),
    C: T.Buffer((127, 127), "float32"),
):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def pad_to_32(a, b):  # type: ignore[no-untyped-def]
    """RFC 77's map: the identity over a box that rounds 127 up to 128."""
    return ((a // 32) * 32 + a % 32, (b // 32) * 32 + b % 32)


def schedule(padded: bool) -> Schedule:
    """The shared schedule, with the three layout transformations when `padded`."""
    sch = Schedule(matmul)
    block = sch.get_block("compute")
    for loop in sch.get_loops(block):
        sch.fuse(*sch.split(loop, factors=[4, 32]))
    if padded:
        for name in ("A", "B", "C"):
            sch.transform_layout(block, name, pad_to_32, pad_value=0.0)
    i, j, k = sch.get_loops(block)
    sch.reorder(i, k, j)
    _, j_inner = sch.split(j, factors=[None, 16])
    sch.vectorize(j_inner)
    sch.parallel(i)
    return sch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--show-c", action="store_true", help="print both kernels' C source")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    a = rng.standard_normal((127, 127), dtype=np.float32)
    b = rng.standard_normal((127, 127), dtype=np.float32)
    expected = a @ b
    rows = []
    for label, padded in (("unpadded 127", False), ("padded 128", True)):
        sch = schedule(padded)
        if args.show_c:
            print(generate_c_source(sch.func))
        records = sch.layout_records()
        inputs = [records[n].forward(x) if n in records else x for n, x in (("A", a), ("B", b))]
        c = np.zeros((128, 128) if padded else (127, 127), dtype=np.float32)
        module = tessel.build(sch.func)
        seconds = median_seconds(lambda m=module, i=inputs, c=c: m(*i, c), args.runs)
        result = records["C"].reverse(c) if padded else c
        np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-3)
        rows.append((label, seconds))
    rows.append(("numpy (A @ B)", median_seconds(lambda: a @ b, args.runs)))

    print(f"matmul 127x127x127 float32, same schedule, median of {args.runs} runs")
    print(f"{'variant':<16}{'time (us)':>12}{'vs numpy':>10}")
    t_numpy = rows[-1][1]
    for label, seconds in rows:
        print(f"{label:<16}{seconds * 1e6:>12.1f}{seconds / t_numpy:>10.2f}")
    print(f"padded 128 / unpadded 127 time ratio: {rows[1][1] / rows[0][1]:.2f}")


if __name__ == "__main__":
    main()
