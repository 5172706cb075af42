"""Float constants that need care: inf, -inf, nan, tiny, huge, and three widths."""
from tessel.script import tir as T


@T.prim_func
def specials(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float64"), C: T.Buffer((2,), "float16")):
    A[0] = T.float32("inf")
    A[1] = T.float32("-inf")
    A[2] = T.float32("nan")
    A[3] = T.float32(1e-30)
    A[4] = T.float32(3.4e38)
    A[5] = T.float32(-0.1)
    A[6] = T.float32(0.1) + T.float32(0.2)
    A[7] = -A[0]
    B[0] = T.float64(0.1)
    B[1] = T.float64(1.0000000000000002)
    C[0] = T.float16(1)
    C[1] = T.float16(0.5)
