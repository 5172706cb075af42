"""T.attr statements on a buffer, a variable and a string node, with several value kinds."""
from tessel.script import tir as T


@T.prim_func
def attrs(A: T.Buffer((16,), "float32"), n: T.int32):
    with T.attr(A, "storage_alignment", 64):
        with T.attr(n, "pragma_hint", [1, 2]):
            with T.attr("default", "pragma_auto_unroll_max_step", n * 2):
                for i in range(16):
                    A[i] = T.float32(1)
