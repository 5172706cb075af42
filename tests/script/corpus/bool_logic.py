"""Bool buffers, constants and logic."""
from tessel.script import tir as T


@T.prim_func
def logic(A: T.Buffer((8,), "bool"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        A[i] = True
        A[i] = A[i] and (B[i] > 0 or False == A[i])
        if not A[i]:
            B[i] = T.Select(A[i], 1, 2)
