"""An int32 matmul (plain int constants, augmented assignment)."""
from tessel.script import tir as T


@T.prim_func
def matmul_i32(A: T.Buffer((16, 8), "int32"), B: T.Buffer((8, 12), "int32"), C: T.Buffer((16, 12), "int32")):
    for i, j, k in T.grid(16, 12, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0
            C[vi, vj] += A[vi, vk] * B[vk, vj]
