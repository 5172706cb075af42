"""T.likely in a condition and T.assume as a statement."""
from tessel.script import tir as T


@T.prim_func
def hints(A: T.Buffer((16,), "float32"), n: T.int32):
    T.assume(n <= 16)
    for i in range(16):
        if T.likely(i < n):
            A[i] = T.float32(1)
