"""An IRModule holding two functions."""
from tessel.script import ir as I
from tessel.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def double(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("double"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)
