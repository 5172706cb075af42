"""Python operators in scripts: Python semantics on Python values, IR builders on expressions.

`1.0 / 32` stays a Python float (as in TVM's evaluator); as soon as one operand is a PrimExpr
the builder of `tessel.ir.builders` makes the node (folding constants, matching dtypes).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.tir import builtin


def _bitwise_or_logical(name: str, logical: Callable[[Any, Any], PrimExpr]):
    def build(a: Any, b: Any) -> PrimExpr:
        """Logical on bools, bitwise on integers (as in TVM)."""
        a, b = builders.match_types(a, b)
        return logical(a, b) if a.dtype.element.is_bool else builtin.bitwise(name, a, b)

    return build


def _power(a: Any, b: Any) -> PrimExpr:
    return builtin.math_binary("pow", a, b)


BINARY: dict[type[ast.operator], tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    ast.Add: (operator.add, builders.add),
    ast.Sub: (operator.sub, builders.sub),
    ast.Mult: (operator.mul, builders.mul),
    ast.Div: (operator.truediv, builders.div),
    ast.FloorDiv: (operator.floordiv, builders.floordiv),
    ast.Mod: (operator.mod, builders.floormod),
    ast.Pow: (operator.pow, _power),
    ast.BitAnd: (operator.and_, _bitwise_or_logical("bitwise_and", builders.logical_and)),
    ast.BitOr: (operator.or_, _bitwise_or_logical("bitwise_or", builders.logical_or)),
    ast.BitXor: (operator.xor, lambda a, b: builtin.bitwise("bitwise_xor", a, b)),
    ast.LShift: (operator.lshift, lambda a, b: builtin.bitwise("shift_left", a, b)),
    ast.RShift: (operator.rshift, lambda a, b: builtin.bitwise("shift_right", a, b)),
}

_Builder = Callable[[Any, Any], Any]
COMPARE: dict[type[ast.cmpop], tuple[_Builder, _Builder | None]] = {
    ast.Eq: (operator.eq, builders.eq),
    ast.NotEq: (operator.ne, builders.ne),
    ast.Lt: (operator.lt, builders.lt),
    ast.LtE: (operator.le, builders.le),
    ast.Gt: (operator.gt, builders.gt),
    ast.GtE: (operator.ge, builders.ge),
    ast.Is: (operator.is_, None),
    ast.IsNot: (operator.is_not, None),
    ast.In: (lambda a, b: a in b, None),
    ast.NotIn: (lambda a, b: a not in b, None),
}


def _invert(a: PrimExpr) -> PrimExpr:
    return builders.logical_not(a) if a.dtype.element.is_bool else builtin.bitwise_not(a)


UNARY: dict[type[ast.unaryop], tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    ast.USub: (operator.neg, builders.neg),
    ast.UAdd: (operator.pos, lambda a: a),
    ast.Not: (operator.not_, builders.logical_not),
    ast.Invert: (operator.invert, _invert),
}


def is_expr(value: Any) -> bool:
    """True for IR expressions (as opposed to Python values)."""
    return isinstance(value, PrimExpr)


def apply_binary(op: ast.operator, a: Any, b: Any) -> Any:
    """`a op b`: Python arithmetic unless an operand is an expression."""
    if type(op) not in BINARY:
        raise TypeError(f"the operator `{type(op).__name__}` is not supported in TVMScript")
    python_op, ir_op = BINARY[type(op)]
    return ir_op(a, b) if is_expr(a) or is_expr(b) else python_op(a, b)


def apply_compare(op: ast.cmpop, a: Any, b: Any) -> Any:
    """One link of a comparison chain."""
    python_op, ir_op = COMPARE[type(op)]
    if not (is_expr(a) or is_expr(b)):
        return python_op(a, b)
    if ir_op is None:
        raise TypeError(f"`{type(op).__name__}` cannot compare expressions; use == or !=")
    return ir_op(a, b)


def apply_unary(op: ast.unaryop, a: Any) -> Any:
    """`op a`."""
    python_op, ir_op = UNARY[type(op)]
    return ir_op(a) if is_expr(a) else python_op(a)


def combine_and(a: Any, b: Any) -> Any:
    """`a and b` on conditions (Python semantics when both are Python values)."""
    return builders.logical_and(a, b) if is_expr(a) or is_expr(b) else (a and b)


def combine_or(a: Any, b: Any) -> Any:
    """`a or b` on conditions."""
    return builders.logical_or(a, b) if is_expr(a) or is_expr(b) else (a or b)
