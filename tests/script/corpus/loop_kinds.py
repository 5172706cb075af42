"""Parallel, vectorized and unrolled loops, including ones with a nonzero start."""
from tessel.script import tir as T


@T.prim_func
def kinds(A: T.Buffer((64, 16), "float32")):
    for i in T.parallel(64):
        for j0 in T.unroll(2, 4):
            for j1 in T.vectorized(4):
                A[i, j0 * 4 + j1] = T.float32(0)
        for j in T.vectorized(0, 8, annotations={"hint": "aligned"}):
            A[i, j] = A[i, j] + T.float32(1)
