"""Symbolic shapes: handle parameters, declared shape variables and T.match_buffer."""
from tessel.script import tir as T


@T.prim_func
def add_rows(a: T.handle, b: T.handle, m: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n, 128), "float32")
    B = T.match_buffer(b, (n, 128), "float32")
    for i, j in T.grid(n, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.Cast("float32", m)
