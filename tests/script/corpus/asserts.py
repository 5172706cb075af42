"""Assert statements wrapping the rest of the body."""
from tessel.script import tir as T


@T.prim_func
def checked(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "float32")
    assert n > 0, "n must be positive"
    assert n % 4 == 0, "n must be a multiple of 4"
    for i in range(n):
        A[i] = T.float32(0)
