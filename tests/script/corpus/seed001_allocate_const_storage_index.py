"""RFC 22: a constant referring to the module's "constants" by index, in 2-D."""
from tessel.script import tir as T


@T.prim_func
def weights(out: T.Buffer((2, 3), "float32")):
    w = T.allocate_const(None, "float32", [2, 3], irmod_storage_idx=0)
    k = T.allocate_const([0.5, -1.25, 3.0, 1e-07, 2.5, 0.1], "float32", [2, 3])
    for i, j in T.grid(2, 3):
        out[i, j] = w[i, j] + k[i, j]
