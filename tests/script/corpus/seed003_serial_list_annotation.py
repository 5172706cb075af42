"""The AttrStmt-values thread: a loop annotation whose value is a list, not an expression."""
from tessel.script import tir as T


@T.prim_func
def fun(x: T.Buffer((16,), "int32")) -> None:
    for k in T.serial(0, 16, annotations={"pragma_key": [1, 2, 3]}):
        x[k] = 1
