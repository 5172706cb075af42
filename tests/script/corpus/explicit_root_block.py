"""An explicit root block carrying annotations, which the printer must keep."""
from tessel.script import tir as T


@T.prim_func
def rooted(A: T.Buffer((4,), "float32")):
    with T.block("root"):
        T.reads()
        T.writes()
        T.block_attr({"pragma": "root"})
        for i in range(4):
            with T.block("fill"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)
