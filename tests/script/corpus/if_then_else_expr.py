"""T.if_then_else versus T.Select, and an if/else statement."""
from tessel.script import tir as T


@T.prim_func
def pad(A: T.Buffer((14,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(16):
        B[i] = T.if_then_else(1 <= i and i < 15, A[i - 1], T.float32(0))
        C[i] = T.Select(i % 2 == 0, T.float32(1), T.float32(-1))
        if i < 8:
            C[i] = C[i] * T.float32(2)
