"""Scan and opaque iterators, and domains given as (begin, end)."""
from tessel.script import tir as T


@T.prim_func
def scan(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(1, 16):
        with T.block("prefix"):
            vi = T.axis.scan((1, 16), i)
            B[vi] = B[vi - 1] + A[vi]
    for i, j in T.grid(4, 4):
        with T.block("opaque"):
            vi = T.axis.opaque(4, i)
            vj = T.axis.S((0, 4), j)
            vk = T.axis.R(2, j // 2)
            T.reads(A[vi * 4 + vj])
            T.writes(B[vi * 4 + vj])
            B[vi * 4 + vj] = A[vi * 4 + vj] + T.Cast("float32", vk)
