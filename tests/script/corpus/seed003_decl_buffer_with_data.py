"""RFC 70 thread: raw memory from T.allocate, viewed through T.decl_buffer(data=...)."""
from tessel.script import tir as T


@T.prim_func
def scalar_view(A: T.Buffer((4,), "int32")):
    with T.allocate([1], "int32", "global") as x_data:
        x = T.decl_buffer((), "int32", data=x_data)
        x[()] = 0
        for i in range(4):
            x[()] = x[()] + A[i]
        A[0] = x[()]
