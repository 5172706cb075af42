"""Vector loads and stores with Ramp indices, Broadcast values and lane predicates."""
from tessel.script import tir as T


@T.prim_func
def vadd(A: T.Buffer((30,), "float32"), B: T.Buffer((30,), "float32")):
    for i in range(8):
        B.vstore([T.Ramp(i * 4, 1, 4)], A.vload([T.Ramp(i * 4, 1, 4)], predicate=T.Ramp(i * 4, 1, 4) < T.Broadcast(30, 4)) + T.Broadcast(T.float32(1), 4), predicate=T.Ramp(i * 4, 1, 4) < T.Broadcast(30, 4))
    B[T.Ramp(0, 2, 4)] = A[T.Ramp(1, 2, 4)] * T.Broadcast(T.float32(0.5), 4)
