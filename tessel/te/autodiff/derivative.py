"""The derivative of a scalar tensor expression with respect to one tensor read (a ProducerLoad).

Conditions (of selects, if_then_else, comparisons) are piecewise constant, so they are kept and
not differentiated; a differentiated read used as an index has no derivative and is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.support.errors import UserError
from tessel.te.tensor import ProducerLoad
from tessel.tir import builtin
from tessel.tir.reduce_expr import Reduce


class NotDifferentiableError(UserError):
    """An expression has no derivative Tessel can build (the message says which and why)."""


def derivative(expr: E.PrimExpr, target: ProducerLoad) -> E.PrimExpr:
    """d expr / d target, where `target` is one read node (every use of that node counts)."""
    return _Differentiator(target).diff(expr)


def mentions(expr: E.PrimExpr, target: ProducerLoad) -> bool:
    """True if the read node `target` occurs in `expr`."""
    return any(node is target for node in post_order(expr))


def _zero(like: E.PrimExpr) -> E.PrimExpr:
    return builders.const(0, like.dtype)


class _Differentiator:
    def __init__(self, target: ProducerLoad):
        self.target = target
        self.memo: dict[int, E.PrimExpr] = {}

    def diff(self, expr: E.PrimExpr) -> E.PrimExpr:
        key = id(expr)
        if key not in self.memo:
            self.memo[key] = self._diff(expr) if mentions(expr, self.target) else _zero(expr)
        return self.memo[key]

    def _diff(self, expr: E.PrimExpr) -> E.PrimExpr:
        if expr is self.target:
            return builders.const(1, expr.dtype)
        if isinstance(expr, ProducerLoad):
            raise NotDifferentiableError(
                f"`{expr}` reads `{expr.producer.name}` at an index computed from "
                f"`{self.target.producer.name}`, which is being differentiated: an index has no "
                "derivative",
                rule="te.gradient.index",
                hint="differentiate with respect to the tensor being indexed, not the indices",
            )
        if not expr.dtype.is_float:
            return _zero(expr)  # integer and bool values are piecewise constant
        rule = _RULES.get(type(expr))
        if rule is None:
            raise NotDifferentiableError(
                f"cannot differentiate `{expr}` ({type(expr).__name__}) with respect to "
                f"`{self.target.producer.name}`",
                rule="te.gradient.unsupported",
            )
        return rule(self, expr)


def _is(e: E.PrimExpr, value: float) -> bool:
    return isinstance(e, E.FloatImm | E.IntImm) and e.value == value


def plus(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a + b, dropping a zero (derivatives are full of them)."""
    return b if _is(a, 0) else a if _is(b, 0) else a + b


def minus(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a - b, dropping a zero."""
    return a if _is(b, 0) else -b if _is(a, 0) else a - b


def times(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """a * b, folding zeros and ones (a zero derivative term contributes nothing)."""
    if _is(a, 0) or _is(b, 0):
        return _zero(a)
    return b if _is(a, 1) else a if _is(b, 1) else a * b


def _add(d: _Differentiator, e: E.Add) -> E.PrimExpr:
    return plus(d.diff(e.a), d.diff(e.b))


def _sub(d: _Differentiator, e: E.Sub) -> E.PrimExpr:
    return minus(d.diff(e.a), d.diff(e.b))


def _mul(d: _Differentiator, e: E.Mul) -> E.PrimExpr:
    return plus(times(d.diff(e.a), e.b), times(e.a, d.diff(e.b)))


def _div(d: _Differentiator, e: E.Div) -> E.PrimExpr:
    # (a / b)' = a' / b - a b' / b^2
    da, db = d.diff(e.a), d.diff(e.b)
    first = _zero(e) if _is(da, 0) else da / e.b
    return minus(first, _zero(e) if _is(db, 0) else times(e.a, db) / (e.b * e.b))


def _min_max(d: _Differentiator, e: E.Min | E.Max) -> E.PrimExpr:
    # The derivative of the operand that is selected; on ties the second one, so relu written
    # as max(x, 0) has PyTorch's derivative 0 at 0.
    first_wins = e.a < e.b if isinstance(e, E.Min) else e.a > e.b
    return builders.select(first_wins, d.diff(e.a), d.diff(e.b))


def _select(d: _Differentiator, e: E.Select) -> E.PrimExpr:
    return builders.select(e.condition, d.diff(e.true_value), d.diff(e.false_value))


def _cast(d: _Differentiator, e: E.Cast) -> E.PrimExpr:
    if not e.value.dtype.is_float:
        return _zero(e)
    return builders.cast(d.diff(e.value), e.dtype)


def _let(d: _Differentiator, e: E.Let) -> E.PrimExpr:
    raise NotDifferentiableError(
        f"cannot differentiate through `let` binding `{e.var.name}`", rule="te.gradient.unsupported"
    )


def _reduce(d: _Differentiator, e: Reduce) -> E.PrimExpr:
    raise NotDifferentiableError(
        "a reduction inside a larger expression cannot be differentiated",
        rule="te.gradient.unsupported",
    )


def _call(d: _Differentiator, e: E.Call) -> E.PrimExpr:
    name = e.op.name.removeprefix("tir.") if isinstance(e.op, E.Op) else ""
    if name == "if_then_else":
        condition, a, b = e.args
        return builtin.if_then_else(condition, d.diff(a), d.diff(b))
    if name in _UNARY:
        (x,) = e.args
        return times(_UNARY[name](x, e), d.diff(x))
    if name == "pow":
        return _pow(d, e)
    raise NotDifferentiableError(
        f"no derivative is defined for `{name or e.op}` (in `{e}`)",
        rule="te.gradient.unsupported",
        hint="the math intrinsics exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow, fabs, sin, "
        "cos, ... and piecewise-constant ones (floor, ceil, round) are differentiable",
    )


def _pow(d: _Differentiator, e: E.Call) -> E.PrimExpr:
    base, exponent = e.args
    result = _zero(e)
    if mentions(base, d.target):
        slope = exponent * builtin.math_binary("pow", base, exponent - 1.0)
        result = plus(result, times(slope, d.diff(base)))
    if mentions(exponent, d.target):
        result = plus(result, times(e * builtin.math_unary("log", base), d.diff(exponent)))
    return result


def _m(name: str, x: E.PrimExpr) -> E.PrimExpr:
    return builtin.math_unary(name, x)


def _const(value: float, like: E.PrimExpr) -> E.PrimExpr:
    return builders.const(value, like.dtype)


# d f(x) / dx in terms of x and of the call f(x) itself.
_UNARY: dict[str, Callable[[E.PrimExpr, E.PrimExpr], E.PrimExpr]] = {
    "exp": lambda x, y: y,
    "exp2": lambda x, y: y * _const(math.log(2.0), x),
    "log": lambda x, y: _const(1.0, x) / x,
    "log2": lambda x, y: _const(1.0, x) / (x * _const(math.log(2.0), x)),
    "log10": lambda x, y: _const(1.0, x) / (x * _const(math.log(10.0), x)),
    "log1p": lambda x, y: _const(1.0, x) / (x + _const(1.0, x)),
    "sqrt": lambda x, y: _const(0.5, x) / y,
    "rsqrt": lambda x, y: _const(-0.5, x) * y / x,
    "sigmoid": lambda x, y: y * (_const(1.0, x) - y),
    "tanh": lambda x, y: _const(1.0, x) - y * y,
    "erf": lambda x, y: _const(2.0 / math.sqrt(math.pi), x) * _m("exp", -(x * x)),
    "sin": lambda x, y: _m("cos", x),
    "cos": lambda x, y: -_m("sin", x),
    "tan": lambda x, y: _const(1.0, x) + y * y,
    "sinh": lambda x, y: _m("cosh", x),
    "cosh": lambda x, y: _m("sinh", x),
    "atan": lambda x, y: _const(1.0, x) / (_const(1.0, x) + x * x),
    "fabs": lambda x, y: builders.select(x >= _const(0.0, x), _const(1.0, x), _const(-1.0, x)),
    **{
        name: (lambda x, y: _const(0.0, x))
        for name in ("floor", "ceil", "round", "trunc", "nearbyint")
    },
}

_RULES: dict[type, Callable] = {
    E.Add: _add, E.Sub: _sub, E.Mul: _mul, E.Div: _div, E.Min: _min_max, E.Max: _min_max,
    E.Select: _select, E.Cast: _cast, E.Call: _call, E.Let: _let, Reduce: _reduce,
}  # fmt: skip
