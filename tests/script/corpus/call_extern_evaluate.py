"""Calls of external functions as expressions and as statements, and T.evaluate."""
from tessel.script import tir as T


@T.prim_func
def extern(A: T.Buffer((4,), "float32")):
    T.evaluate(0)
    T.call_extern("int32", "tessel_trace", 1, 2)
    for i in range(4):
        A[i] = T.call_extern("float32", "my_sin", A[i])
    T.evaluate(T.call_extern("int32", "flush"))
