"""int64 loops, shapes and constants."""
from tessel.script import tir as T


@T.prim_func
def wide(A: T.Buffer((T.int64(8), T.int64(4)), "float32"), B: T.Buffer((T.int64(32),), "float32")):
    for i, j in T.grid(T.int64(8), T.int64(4)):
        with T.block("flatten"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * T.int64(4) + vj] = A[vi, vj]
