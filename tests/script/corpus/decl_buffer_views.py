"""Views of raw memory through T.decl_buffer with a different shape, strides and offset."""
from tessel.script import tir as T


@T.prim_func
def views(A: T.Buffer((16,), "float32")):
    with T.allocate([16], "float32", "global") as buf:
        flat = T.decl_buffer((16,), "float32", data=buf)
        grid = T.decl_buffer((4, 4), "float32", data=buf)
        odd = T.decl_buffer((4,), "float32", data=buf, strides=(4,), elem_offset=1)
        for i in range(16):
            flat[i] = A[i]
        for i in range(4):
            odd[i] = grid[i, i]
