"""Hypothesis strategies for random integer expressions, and an exact evaluator to check them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Call,
    Cast,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from tessel.support.dtype import DataType, int8, int16, int32

# A deterministic profile for property tests of the analyses: seeded, no deadline.
ARITH_SETTINGS = settings(derandomize=True, max_examples=200, deadline=None, database=None)

DEFAULT_OPS = ("add", "sub", "mul", "floordiv", "floormod", "min", "max", "select")
ALL_OPS = (*DEFAULT_OPS, "truncdiv", "truncmod", "cast")

_BINARY = {
    "add": Add,
    "sub": Sub,
    "mul": Mul,
    "min": Min,
    "max": Max,
    "floordiv": FloorDiv,
    "floormod": FloorMod,
    "truncdiv": Div,
    "truncmod": Mod,
}
_DIVISIONS = ("floordiv", "floormod", "truncdiv", "truncmod")
_COMPARISONS = (EQ, NE, LT, LE, GT, GE)


def int_exprs(
    variables: Sequence[Var],
    max_depth: int = 3,
    *,
    ops: Sequence[str] = DEFAULT_OPS,
    max_constant: int = 16,
) -> st.SearchStrategy[PrimExpr]:
    """Random integer expressions over `variables` (which share one dtype).

    `ops` picks from + - * // % min max select (DEFAULT_OPS) and truncdiv, truncmod, cast
    (ALL_OPS). Divisors are nonzero constants, so evaluation never divides by zero; a cast goes
    through a narrower type and back, so it may wrap. Nodes are built directly, unfolded.
    """
    dtype = variables[0].dtype
    if any(v.dtype != dtype for v in variables):
        raise ValueError("int_exprs needs variables of one dtype")
    unknown = set(ops) - set(ALL_OPS)
    if unknown:
        raise ValueError(f"unknown ops {sorted(unknown)}; choose from {ALL_OPS}")
    return _exprs(tuple(variables), max_depth, tuple(ops), max_constant)


@cache
def _constants(dtype: DataType, max_constant: int) -> st.SearchStrategy[PrimExpr]:
    return st.integers(-max_constant, max_constant).map(lambda v: IntImm(dtype, v))


@cache
def _divisors(dtype: DataType, max_constant: int) -> st.SearchStrategy[PrimExpr]:
    values = st.integers(1, max_constant) | st.integers(-max_constant, -1)
    return values.map(lambda v: IntImm(dtype, v))


@cache
def _exprs(
    variables: tuple[Var, ...], depth: int, ops: tuple[str, ...], max_constant: int
) -> st.SearchStrategy[PrimExpr]:
    leaves = st.sampled_from(variables) | _constants(variables[0].dtype, max_constant)
    if depth == 0:
        return leaves
    return leaves | _compound(variables, depth, ops, max_constant)


@st.composite
def _compound(
    draw: Callable[..., Any],
    variables: tuple[Var, ...],
    depth: int,
    ops: tuple[str, ...],
    max_constant: int,
) -> PrimExpr:
    dtype = variables[0].dtype
    sub = _exprs(variables, depth - 1, ops, max_constant)
    op = draw(_choices(ops))
    if op == "select":
        condition = draw(_conditions(sub))
        return Select(condition, draw(sub), draw(sub))
    if op == "cast":
        narrow = draw(_choices((int8, int16, int32)))
        return Cast(dtype, Cast(narrow, draw(sub)))
    if op in _DIVISIONS:
        return _BINARY[op](draw(sub), draw(_divisors(dtype, max_constant)))
    return _BINARY[op](draw(sub), draw(sub))


@cache
def _choices(values: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


@cache
def _conditions(operands: st.SearchStrategy[PrimExpr]) -> st.SearchStrategy[PrimExpr]:
    comparisons = st.builds(_apply, st.sampled_from(_COMPARISONS), operands, operands)
    negated = comparisons.map(Not)
    joined = st.builds(_apply, st.sampled_from((And, Or)), comparisons, comparisons)
    return comparisons | negated | joined


def _apply(cls: Callable[[PrimExpr, PrimExpr], PrimExpr], a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return cls(a, b)


def var_ranges(
    variables: Sequence[Var], low: int = -64, high: int = 64
) -> st.SearchStrategy[dict[Var, tuple[int, int]]]:
    """An inclusive (min, max) range inside [low, high] for each variable."""
    pair = st.tuples(st.integers(low, high), st.integers(low, high)).map(lambda p: (min(p), max(p)))
    return st.fixed_dictionaries({v: pair for v in variables})


def points_in(ranges: Mapping[Var, tuple[int, int]]) -> st.SearchStrategy[dict[Var, int]]:
    """A value for each variable within its inclusive range."""
    return st.fixed_dictionaries({v: st.integers(lo, hi) for v, (lo, hi) in ranges.items()})


# ---- exact evaluation ----------------------------------------------------------------------------


def evaluate(expr: PrimExpr, env: Mapping[Var, int], *, wrap: bool = True) -> int:
    """The value of an integer or bool expression (bools as 0/1) with variables from `env`.

    Arithmetic is exact with floor semantics for // and % and truncation for Div/Mod, then
    wraps around on the dtype; with `wrap=False` an arithmetic result outside its dtype raises
    OverflowError instead (casts always wrap: that is their meaning).
    """
    return _Evaluator(env, wrap).run(expr)


def _truncdiv(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y >= 0) else -quotient


def _truncmod(x: int, y: int) -> int:
    return x - _truncdiv(x, y) * y


_ARITHMETIC: dict[type, Callable[[int, int], int]] = {
    Add: lambda x, y: x + y,
    Sub: lambda x, y: x - y,
    Mul: lambda x, y: x * y,
    Div: _truncdiv,
    Mod: _truncmod,
    FloorDiv: lambda x, y: x // y,
    FloorMod: lambda x, y: x % y,
    Min: min,
    Max: max,
}
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    EQ: lambda x, y: x == y,
    NE: lambda x, y: x != y,
    LT: lambda x, y: x < y,
    LE: lambda x, y: x <= y,
    GT: lambda x, y: x > y,
    GE: lambda x, y: x >= y,
}


class _Evaluator:
    """Evaluates one expression; Let bodies get an evaluator with the binding added."""

    def __init__(self, env: Mapping[Var, int], wrap: bool) -> None:
        self.env = env
        self.wrap = wrap

    def run(self, expr: PrimExpr) -> int:
        if isinstance(expr, BinaryOp):
            value = _ARITHMETIC[type(expr)](self.run(expr.a), self.run(expr.b))
            return self._fit(value, expr.dtype)
        if isinstance(expr, CmpOp):
            return int(_COMPARE[type(expr)](self.run(expr.a), self.run(expr.b)))
        return self._other(expr)

    def _other(self, expr: PrimExpr) -> int:
        if isinstance(expr, IntImm):
            return expr.value
        if isinstance(expr, Var):
            return self.env[expr]
        if isinstance(expr, Cast):
            return _convert(self.run(expr.value), expr.dtype)
        if isinstance(expr, Select):
            return self.run(expr.true_value if self.run(expr.condition) else expr.false_value)
        if isinstance(expr, Let):
            inner = {**self.env, expr.var: self.run(expr.value)}
            return _Evaluator(inner, self.wrap).run(expr.body)
        return self._logical(expr)

    def _logical(self, expr: PrimExpr) -> int:
        if isinstance(expr, And):
            return int(bool(self.run(expr.a)) and bool(self.run(expr.b)))
        if isinstance(expr, Or):
            return int(bool(self.run(expr.a)) or bool(self.run(expr.b)))
        if isinstance(expr, Not):
            return 1 - self.run(expr.a)
        if isinstance(expr, Call) and getattr(expr.op, "name", None) == "tir.if_then_else":
            condition, then, other = expr.args
            return self.run(then if self.run(condition) else other)
        raise TypeError(f"evaluate cannot evaluate {type(expr).__name__}: `{expr}`")

    def _fit(self, value: int, dtype: DataType) -> int:
        if dtype.min_value() <= value <= dtype.max_value():
            return value
        if not self.wrap:
            raise OverflowError(f"{value} overflows {dtype}")
        return _convert(value, dtype)


def _convert(value: int, dtype: DataType) -> int:
    """`value` as `dtype` holds it: nonzero is true for bool, integers wrap around."""
    if dtype.is_bool:
        return int(value != 0)
    span = 1 << dtype.bits
    value %= span
    return value - span if dtype.is_int and value >= span // 2 else value
