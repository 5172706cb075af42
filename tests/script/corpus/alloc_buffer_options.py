"""T.alloc_buffer with scope, strides, alignment and offset factor, at function and block level."""
from tessel.script import tir as T


@T.prim_func
def staged(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32")):
    A_shared = T.alloc_buffer((32, 32), "float32", scope="shared", strides=(33, 1))
    A_local = T.alloc_buffer((32, 32), "float32", scope="local", align=16, offset_factor=2)
    for i, j in T.grid(32, 32):
        with T.block("A_shared"):
            vi, vj = T.axis.remap("SS", [i, j])
            A_shared[vi, vj] = A[vi, vj]
    for i, j in T.grid(32, 32):
        with T.block("A_local"):
            vi, vj = T.axis.remap("SS", [i, j])
            A_local[vi, vj] = A_shared[vi, vj]
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_local[vi, vj]
