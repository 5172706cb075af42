"""if without else, nested if/else, and a while loop over a scalar buffer."""
from tessel.script import tir as T


@T.prim_func
def control(A: T.Buffer((16,), "int32"), n: T.int32):
    for i in range(16):
        if i < n:
            A[i] = 1
        if i % 3 == 0:
            A[i] = 0
        else:
            if i % 3 == 1:
                A[i] = 1
            else:
                A[i] = 2
    k = T.allocate([1], "int32", "global")
    k[0] = 0
    while k[0] < n and k[0] < 16:
        A[k[0]] = A[k[0]] + 1
        k[0] = k[0] + 1
