"""An opaque outer block holding two inner blocks and a block-local buffer."""
from tessel.script import tir as T


@T.prim_func
def nested(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    for i in range(8):
        with T.block("outer"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi, 0:8])
            T.writes(C[vi, 0:8])
            row = T.alloc_buffer((8,), "float32", scope="local")
            for j in range(8):
                with T.block("load"):
                    vj = T.axis.spatial(8, j)
                    row[vj] = A[vi, vj]
            for j in range(8):
                with T.block("store"):
                    vj = T.axis.spatial(8, j)
                    C[vi, vj] = row[7 - vj]
