"""RFC 70 thread: a rank-0 T.allocate used as x[()], with a while loop."""
from tessel.script import tir as T


@T.prim_func
def count(A: T.Buffer((128,), "int32")):
    x = T.allocate((), "int32", "")
    x[()] = 0
    while x[()] < 128:
        A[x[()]] = x[()]
        x[()] = x[()] + 1
