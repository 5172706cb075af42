"""Buffer parameters with strides, element offset, scope, alignment and axis separators."""
from tessel.script import tir as T


@T.prim_func
def fields(a: T.handle, b: T.handle, c: T.handle):
    s = T.int32()
    off = T.int32()
    A = T.match_buffer(a, (16, 16), "float32", strides=(s, 1), elem_offset=off)
    B = T.match_buffer(b, (4, 4), "float32", scope="global.texture", align=128, offset_factor=4)
    C = T.match_buffer(c, (2, 8, 8), "int32", axis_separators=[1])
    for i, j in T.grid(4, 4):
        B[i, j] = A[i * 4, j * 4]
    for i, j, k in T.grid(2, 8, 8):
        C[i, j, k] = i + j + k
