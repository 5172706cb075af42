"""Function attributes other than the global symbol."""
from tessel.script import tir as T


@T.prim_func
def attributed(A: T.Buffer((4,), "float32")):
    T.func_attr({"tir.noalias": True, "target": "c", "tile": [4, 8], "scale": 0.5})
    for i in range(4):
        A[i] = T.float32(1)
