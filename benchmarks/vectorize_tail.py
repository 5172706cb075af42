"""Time an elementwise kernel whose vectorized loop has a tail: scalar vs predicated vectors.

Run as `python benchmarks/vectorize_tail.py [--rows 2048] [--runs 100] [--show-c]`. The kernel is
`C = A * 3 + B` on float32 arrays of `rows x n`, for n = 127 and 1000 (127 is a multiple of
neither 8 nor 16, 1000 of 8 only). Its inner loop of extent n is lowered as:

- scalar: not vectorized (GCC -O3 may still vectorize it, with its own scalar tail);
- split 8: `split(j, [None, 8])` + `vectorize` of the inner loop (predicated, no tail loop);
- vector_length 8: `vectorize(j, vector_length=8)`, the same C as split 8;
- vector_length 16: `vectorize(j, vector_length=16)`, AVX-512-wide chunks;
- vectorize: `vectorize(j)`, chunks of VectorizeLoop's default width (32 bytes: 8 float32
  lanes), so the same C as vector_length 8.

A chunk with a disabled lane goes lane by lane; every other chunk is one unaligned vector copy.

Times are medians of one call on the whole array, NumPy's `np.multiply` + `np.add` (with `out=`)
is measured in the same run as the reference; every variant's result is checked against it.
The call overhead of a Tessel function (argument checks through ctypes) is in every time: the
last row times a 1-element kernel to show it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from timing import median_seconds

import tessel
from tessel.driver import generate_c_source
from tessel.schedule import Schedule
from tessel.script import parse
from tessel.tir.function import PrimFunc


def kernel(rows: int, n: int) -> PrimFunc:
    """`C = A * 3 + B` over `rows x n` float32 elements."""
    return parse(f"""
@T.prim_func
def axpb(A: T.Buffer(({rows}, {n}), "float32"), B: T.Buffer(({rows}, {n}), "float32"),
         C: T.Buffer(({rows}, {n}), "float32")):
    for i, j in T.grid({rows}, {n}):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(3) + B[vi, vj]
""")


def _split_8(sch: Schedule) -> None:
    _, j = sch.get_loops(sch.get_block("C"))
    _, inner = sch.split(j, [None, 8])
    sch.vectorize(inner)


def _vector_length(sch: Schedule, lanes: int) -> None:
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j, vector_length=lanes)


def _vectorize(sch: Schedule) -> None:
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)


VARIANTS: dict[str, Callable[[Schedule], None]] = {
    "scalar": lambda sch: None,
    "split 8": _split_8,
    "vector_length 8": lambda sch: _vector_length(sch, 8),
    "vector_length 16": lambda sch: _vector_length(sch, 16),
    "vectorize": _vectorize,
}


def time_extent(rows: int, n: int, runs: int, show_c: bool) -> list[tuple[str, float]]:
    """(variant, median seconds) for every variant and NumPy, on `rows x n` arrays."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, n), dtype=np.float32)
    b = rng.standard_normal((rows, n), dtype=np.float32)
    c = np.zeros_like(a)
    expected = a * np.float32(3) + b
    rows_out = []
    for label, steps in VARIANTS.items():
        sch = Schedule(kernel(rows, n))
        steps(sch)
        if show_c:
            print(f"// {label}, n = {n}\n{generate_c_source(sch.func)}")
        module = tessel.build(sch.func)
        c.fill(0)
        seconds = median_seconds(lambda m=module: m(a, b, c), runs)
        np.testing.assert_allclose(c, expected, rtol=1e-6)
        rows_out.append((label, seconds))

    def numpy_axpb() -> None:
        np.multiply(a, np.float32(3), out=c)
        np.add(c, b, out=c)

    rows_out.append(("numpy", median_seconds(numpy_axpb, runs)))
    return rows_out


def call_overhead(runs: int) -> float:
    """The median time of a call of a 1-element kernel: what every Tessel row includes."""
    module = tessel.build(kernel(1, 1))
    a, b, c = (np.zeros((1, 1), np.float32) for _ in range(3))
    return median_seconds(lambda: module(a, b, c), runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--show-c", action="store_true", help="print every kernel's C source")
    args = parser.parse_args()

    print(f"C = A * 3 + B, float32, {args.rows} rows x n, median of {args.runs} runs")
    print(f"{'n':>5}  {'variant':<18}{'time (us)':>12}{'vs numpy':>10}{'vs scalar':>11}")
    for n in (127, 1000):
        rows = time_extent(args.rows, n, args.runs, args.show_c)
        t_numpy, t_scalar = rows[-1][1], rows[0][1]
        for label, seconds in rows:
            print(
                f"{n:>5}  {label:<18}{seconds * 1e6:>12.1f}{seconds / t_numpy:>10.2f}"
                f"{seconds / t_scalar:>11.2f}"
            )
    print(f"call overhead (1-element kernel): {call_overhead(args.runs) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
