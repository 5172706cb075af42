"""Let statements (annotated and plain) and a T.let expression."""
from tessel.script import tir as T


@T.prim_func
def lets(A: T.Buffer((16,), "int32"), n: T.int32):
    v = T.int32()
    half: T.int32 = n // 2
    offset = half + 1
    for i in range(16):
        A[i] = T.let(v, i * 2, v + v) + offset
