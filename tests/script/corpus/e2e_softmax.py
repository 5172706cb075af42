"""Softmax: a max reduction initialised to -inf, a sum of exponentials, a division."""
from tessel.script import tir as T


@T.prim_func
def softmax(A: T.Buffer((6, 20), "float32"), B: T.Buffer((6, 20), "float32")):
    row_max = T.alloc_buffer((6,), "float32")
    row_sum = T.alloc_buffer((6,), "float32")
    for i, k in T.grid(6, 20):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_max[vi] = T.float32("-inf")
            row_max[vi] = T.max(row_max[vi], A[vi, vk])
    for i, k in T.grid(6, 20):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_sum[vi] = T.float32(0)
            row_sum[vi] = row_sum[vi] + T.exp(A[vi, vk] - row_max[vi])
    for i, j in T.grid(6, 20):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj] - row_max[vi]) / row_sum[vi]
