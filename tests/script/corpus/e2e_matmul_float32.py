"""A float32 matmul reduction with an init block."""
from tessel.script import tir as T


@T.prim_func
def matmul_f32(A: T.Buffer((32, 24), "float32"), B: T.Buffer((24, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    for i, j, k in T.grid(32, 16, 24):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
