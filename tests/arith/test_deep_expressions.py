"""The simplifier takes expressions thousands of operators deep (a fused chain of elementwise
operators) under Python's default recursion limit (issue 25)."""

from tessel.arith import Analyzer
from tessel.ir.expr import Add, Mul, Var
from tessel.support.dtype import DataType


def _chain(depth: int, dtype: str):
    x, y = Var("x", DataType.of(dtype)), Var("y", DataType.of(dtype))
    expr = x
    for k in range(depth):
        expr = Add(expr, y) if k % 2 else Mul(expr, y)  # built raw: no folding on the way
    return expr


def test_a_3000_deep_float_expression_simplifies_to_itself():
    expr = _chain(3000, "float32")
    assert Analyzer().simplify(expr) is expr  # floats fold only: nothing to do


def test_a_3000_deep_integer_expression_simplifies():
    expr = _chain(3000, "int32")
    assert Analyzer().simplify(expr).dtype == expr.dtype
