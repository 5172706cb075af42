"""Casts between integer and float dtypes of several widths."""
from tessel.script import tir as T


@T.prim_func
def casts(A: T.Buffer((8,), "int8"), B: T.Buffer((8,), "float16"), C: T.Buffer((8,), "int32"), D: T.Buffer((8,), "float64")):
    for i in range(8):
        C[i] = T.Cast("int32", A[i]) * 3 + T.Cast("int32", B[i])
        D[i] = T.Cast("float64", B[i]) + T.float64(2.5)
        B[i] = T.Cast("float16", T.Cast("float32", A[i]) * T.float32(0.25))
