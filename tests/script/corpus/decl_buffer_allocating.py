"""T.decl_buffer without data= (an Allocate and a DeclBuffer), and T.allocate buffers."""
from tessel.script import tir as T


@T.prim_func
def scratch(A: T.Buffer((16,), "float32")):
    tmp = T.decl_buffer((16,), "float32", scope="global")
    acc = T.allocate([4], "float32", "local")
    for i in range(16):
        tmp[i] = A[i] * T.float32(2)
    for i in range(4):
        acc[i] = tmp[i * 4] + tmp[i * 4 + 3]
    A[0] = acc[0]
