"""Rank-0 buffers: a scalar parameter buffer reduced into, and x[()] indexing."""
from tessel.script import tir as T


@T.prim_func
def total(A: T.Buffer((16,), "float32"), S: T.Buffer((), "float32")):
    for k in range(16):
        with T.block("sum"):
            vk = T.axis.reduce(16, k)
            with T.init():
                S[()] = T.float32(0)
            S[()] = S[()] + A[vk]
