"""A reduction into a block-local accumulator with init, plus block match_buffer and attributes."""
from tessel.script import tir as T


@T.prim_func
def rowsum(A: T.Buffer((8, 32), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("row"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi, 0:32])
            T.writes(B[vi])
            T.block_attr({"auto_unroll": 16})
            acc = T.alloc_buffer((1,), "float32", scope="local")
            A_row = T.match_buffer(A[vi, 0:32], (32,), "float32")
            for k in range(32):
                with T.block("acc"):
                    vk = T.axis.reduce(32, k)
                    with T.init():
                        acc[0] = T.float32(0)
                    acc[0] = acc[0] + A_row[vk]
            B[vi] = acc[0]
