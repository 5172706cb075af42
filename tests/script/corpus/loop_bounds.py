"""Serial loops with nonzero and symbolic bounds."""
from tessel.script import tir as T


@T.prim_func
def bounds(a: T.handle, lo: T.int32, hi: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    for i in range(2, 10):
        A[i] = i
    for i in range(lo, hi):
        A[i] = 0
    for i in range(n - 1):
        for j in range(i, n):
            A[j] = A[j] + A[i]
