"""A private function (no global symbol) and a public one in a module with attributes."""
from tessel.script import ir as I
from tessel.script import tir as T


@I.ir_module
class Module:
    I.module_attrs({"note": "two functions", "version": 2})

    @T.prim_func(private=True)
    def helper(A: T.Buffer((4,), "int32")):
        for i in range(4):
            A[i] = i

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        for i in range(4):
            A[i] = A[i] * 2
