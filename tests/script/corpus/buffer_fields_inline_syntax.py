"""The same buffer fields written inline in T.Buffer parameter annotations."""
from tessel.script import tir as T


@T.prim_func
def inline_fields(A: T.Buffer((16, 16), "float32", strides=(32, 1), elem_offset=4), B: T.Buffer((8,), "float16", scope="shared"), C: T.Buffer((4, 4), "int8", axis_separators=[1])):
    for i in range(8):
        B[i] = T.Cast("float16", A[i, i])
    for i, j in T.grid(4, 4):
        C[i, j] = T.int8(1)
