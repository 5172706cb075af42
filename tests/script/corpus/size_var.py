"""A shape given by a size variable (known non-negative)."""
from tessel.script import tir as T


@T.prim_func
def sized(a: T.handle):
    n = T.int32(is_size_var=True)
    A = T.match_buffer(a, (n,), "float32")
    for i in range(n):
        A[i] = T.float32(0)
