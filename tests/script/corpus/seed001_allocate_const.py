"""RFC 22: a constant buffer with its data in the IR."""
from tessel.script import tir as T


@T.prim_func
def myfunc(out: T.Buffer((10,), "int32")):
    param = T.allocate_const([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "int32", [10])
    for i in range(10):
        out[i] = param[i] * 2
