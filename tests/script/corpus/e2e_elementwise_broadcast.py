"""Elementwise add of a broadcast bias, then relu and scale, through an intermediate buffer."""
from tessel.script import tir as T


@T.prim_func
def elementwise_broadcast(A: T.Buffer((8, 16), "float32"), bias: T.Buffer((16,), "float32"), C: T.Buffer((8, 16), "float32")):
    tmp = T.alloc_buffer((8, 16), "float32")
    for i, j in T.grid(8, 16):
        with T.block("add_bias"):
            vi, vj = T.axis.remap("SS", [i, j])
            tmp[vi, vj] = A[vi, vj] + bias[vj]
    for i, j in T.grid(8, 16):
        with T.block("relu_scale"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(tmp[vi, vj], T.float32(0)) * T.float32(2) + T.float32(0.5)
