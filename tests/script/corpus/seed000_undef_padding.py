"""RFC 77: padding filled with T.undef() and a buffer constraint stated with T.assume."""
from tessel.script import tir as T


@T.prim_func
def padded(A: T.Buffer((4, 4), "float32"), B: T.Buffer((16,), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("A_assumption"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes()
            T.assume(not (vi * 4 + vj >= 14) or A[vi, vj] == T.float32(0))
    for i in range(16):
        with T.block("copy"):
            vi = T.axis.spatial(16, i)
            if vi < 14:
                B[vi] = A[vi // 4, vi % 4]
            else:
                B[vi] = T.undef()
