"""A loop variable shadowing another of the same name, and sibling loops reusing a name."""
from tessel.script import tir as T


@T.prim_func
def shadow(A: T.Buffer((4, 4), "int32")):
    for i in range(4):
        for i in range(4):
            A[i, 0] = i
    for i in range(4):
        A[i, i] = i
