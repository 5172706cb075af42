"""GPU-style thread-bound loops, with and without annotations."""
from tessel.script import tir as T


@T.prim_func
def bound(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x", annotations={"pragma_unroll": 1}):
            with T.block("copy"):
                v = T.axis.spatial(1024, bx * 128 + tx)
                B[v] = A[v]
