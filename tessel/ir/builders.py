"""Expression builders behind PrimExpr's operators: dtype matching and constant folding.

Folding happens here, on construction (as TVM's operator overloads do); node classes built
directly are never folded, so the printer and parser can reproduce any tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

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
    Broadcast,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    SymbolicEquality,
)
from tessel.support.dtype import DataType, bool_, float32, int32, int64
from tessel.support.errors import IRTypeError


def const(value: int | float | bool, dtype: DataType | str | None = None) -> PrimExpr:
    """A constant of `dtype` (default: bool, int32 (int64 if too large) or float32)."""
    if dtype is None:
        dtype = _default_dtype(value)
    dtype = DataType.of(dtype)
    if dtype.is_vector:
        return Broadcast(const(value, dtype.element), dtype.lanes)
    if dtype.is_float:
        return FloatImm(dtype, float(value))
    if dtype.is_bool:
        return IntImm(dtype, int(bool(value)))
    if isinstance(value, float) and not float(value).is_integer():
        raise IRTypeError(f"cannot make an {dtype} constant from the float {value}")
    return IntImm(dtype, int(value))


def _default_dtype(value: Any) -> DataType:
    if isinstance(value, bool | np.bool_):
        return bool_
    if isinstance(value, int | np.integer):
        return int32 if -(2**31) <= int(value) < 2**31 else int64
    if isinstance(value, float | np.floating):
        return float32
    raise IRTypeError(f"cannot use {value!r} of type {type(value).__name__} as an expression")


def _as_node(value: Any) -> Any:
    """An expression for objects that stand for one; Python numbers stay as they are."""
    if isinstance(value, SymbolicEquality):
        return value.as_expr()
    as_prim_expr = getattr(type(value), "as_prim_expr", None)
    return value if as_prim_expr is None else as_prim_expr(value)


def convert(value: Any) -> PrimExpr:
    """A PrimExpr from an expression, the result of `expr == x`, or a Python number."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, SymbolicEquality):
        return value.as_expr()
    # Objects that stand for an expression (te's axis iterators) say which one.
    as_prim_expr = getattr(type(value), "as_prim_expr", None)
    if as_prim_expr is not None:
        return as_prim_expr(value)
    return const(value)


def _scalar_to(value: Any, like: PrimExpr) -> PrimExpr:
    """Convert a Python number to the dtype of the other operand (as TVM does)."""
    dtype = like.dtype.element
    if isinstance(value, float) and not dtype.is_float and not float(value).is_integer():
        dtype = float32 if dtype.bits <= 32 else DataType("float", 64)
        return const(value, dtype)
    if isinstance(value, bool) and not dtype.is_bool:
        return const(int(value), dtype)
    return const(value, dtype)


def cast(value: Any, dtype: DataType | str) -> PrimExpr:
    """`value` converted to `dtype`, folded for constants; the same node if already of it."""
    dtype = DataType.of(dtype)
    value = convert(value)
    if value.dtype == dtype:
        return value
    if isinstance(value, IntImm | FloatImm) and not dtype.is_vector:
        return const(_wrap_to(value.value, dtype), dtype)
    if isinstance(value, Broadcast) and dtype.is_vector:
        return Broadcast(cast(value.value, dtype.element), dtype.lanes)
    if dtype.is_vector and not value.dtype.is_vector:
        return Broadcast(cast(value, dtype.element), dtype.lanes)
    return Cast(dtype, value)


def _wrap_to(value: int | float, dtype: DataType) -> int | float:
    """Convert a Python number to `dtype`'s value set: wrap integers, truncate floats."""
    if dtype.is_float:
        with np.errstate(over="ignore"):  # overflow to inf is the IEEE result, not a problem
            return float(np.asarray(value).astype(dtype.numpy))
    if dtype.is_bool:
        return int(bool(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise IRTypeError(f"cannot convert {value} to {dtype}")
        value = math.trunc(value)
    return _wrap_int(int(value), dtype)


def _wrap_int(value: int, dtype: DataType) -> int:
    span = 1 << dtype.bits
    value %= span
    if dtype.is_int and value >= span // 2:
        value -= span
    return value


def match_types(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Bring two operands to one dtype: Python numbers take the other side's dtype; ints widen;
    an int meets a float by becoming that float; a scalar meets a vector by broadcast."""
    # The common case first (every builder comes here): two expressions of one dtype.
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and a.dtype == b.dtype:
        return a, b
    a, b = _as_node(a), _as_node(b)
    if not isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        a = _scalar_to(a, b)
    elif not isinstance(b, PrimExpr) and isinstance(a, PrimExpr):
        b = _scalar_to(b, a)
    a, b = convert(a), convert(b)
    if a.dtype == b.dtype:
        return a, b
    target = _common_dtype(a.dtype, b.dtype)
    return cast(a, target), cast(b, target)


def _common_dtype(x: DataType, y: DataType) -> DataType:
    lanes = max(x.lanes, y.lanes)
    if x.lanes != y.lanes and min(x.lanes, y.lanes) != 1:
        raise IRTypeError(f"cannot combine vectors of {x.lanes} and {y.lanes} lanes")
    ex, ey = x.element, y.element
    if ex == ey:
        return ex.with_lanes(lanes)
    if ex.is_float or ey.is_float:
        floats = [t for t in (ex, ey) if t.is_float]
        if len(floats) == 1:
            return floats[0].with_lanes(lanes)
        if ex.bits == ey.bits:  # float16 and bfloat16: float32 holds both exactly
            return DataType("float", 32, lanes)
        return max(floats, key=lambda t: t.bits).with_lanes(lanes)
    if ex.is_bool or ey.is_bool:
        other = ey if ex.is_bool else ex
        return other.with_lanes(lanes)
    if ex.code != ey.code and ex.bits == ey.bits:
        raise IRTypeError(f"cannot combine {ex} and {ey}; cast one side explicitly")
    return (ex if ex.bits > ey.bits else ey).with_lanes(lanes)


def _is_const(e: PrimExpr, value: int | None = None) -> bool:
    if not isinstance(e, IntImm | FloatImm):
        return False
    return value is None or e.value == value


def _fold_int(op: Callable[[int, int], int], a: IntImm, b: IntImm) -> PrimExpr:
    if op in _DIVISIONS and b.value == -1 and a.dtype.is_int and a.value == a.dtype.min_value():
        # C leaves it undefined and the interpreter and compiled code refuse it at run time.
        raise IRTypeError(f"{a.value} divided by -1 overflows {a.dtype}")
    return IntImm(a.dtype, _wrap_int(op(a.value, b.value), a.dtype))


def _binary(node_cls: type[BinaryOp], int_op: Callable, float_op: Callable | None = None):
    def build(a: Any, b: Any) -> PrimExpr:
        a, b = match_types(a, b)
        if isinstance(a, IntImm) and isinstance(b, IntImm) and not a.dtype.is_bool:
            return _fold_int(int_op, a, b)
        if isinstance(a, FloatImm) and isinstance(b, FloatImm) and float_op is not None:
            return FloatImm(a.dtype, _wrap_to(float_op(a.value, b.value), a.dtype))
        return node_cls(a, b)

    build.__name__ = node_cls.__name__.lower()
    return build


def _checked_divisor(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def run(x: Any, y: Any) -> Any:
        if y == 0:
            raise IRTypeError("division by the constant zero")
        return op(x, y)

    return run


def _truncdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _truncmod(x: int, y: int) -> int:
    return x - _truncdiv(x, y) * y


def _float_div(x: float, y: float) -> float:
    if y == 0:
        if x == 0 or math.isnan(x):  # 0/0 and nan/0 are nan, as in IEEE 754
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1, y)
    return x / y


_add = _binary(Add, lambda x, y: x + y, lambda x, y: x + y)
_sub = _binary(Sub, lambda x, y: x - y, lambda x, y: x - y)
_mul = _binary(Mul, lambda x, y: x * y, lambda x, y: x * y)
_div_int = _checked_divisor(_truncdiv)
_truncmod_int = _checked_divisor(_truncmod)
_floordiv_int = _checked_divisor(lambda x, y: x // y)
_floormod_int = _checked_divisor(lambda x, y: x % y)
_div = _binary(Div, _div_int, _float_div)
truncmod = _binary(Mod, _truncmod_int)
_floordiv = _binary(FloorDiv, _floordiv_int, lambda x, y: math.floor(x / y))
_floormod = _binary(FloorMod, _floormod_int)
min_value = _binary(Min, min, min)
_DIVISIONS = (_div_int, _truncmod_int, _floordiv_int, _floormod_int)
max_value = _binary(Max, max, max)


def add(a: Any, b: Any) -> PrimExpr:
    """a + b, folding constants and adding zero away."""
    a, b = match_types(a, b)
    if _is_const(b, 0):
        return a
    if _is_const(a, 0):
        return b
    return _add(a, b)


def sub(a: Any, b: Any) -> PrimExpr:
    """a - b, folding constants and subtracting zero away."""
    a, b = match_types(a, b)
    return a if _is_const(b, 0) else _sub(a, b)


def mul(a: Any, b: Any) -> PrimExpr:
    """a * b, folding constants and multiplications by one (and integer zero)."""
    a, b = match_types(a, b)
    if _is_const(b, 1):
        return a
    if _is_const(a, 1):
        return b
    if a.dtype.is_integer and (_is_const(a, 0) or _is_const(b, 0)) and not a.dtype.is_vector:
        return const(0, a.dtype)
    return _mul(a, b)


def div(a: Any, b: Any) -> PrimExpr:
    """a / b: true division for floats, truncating division for integers (T.truncdiv)."""
    a, b = match_types(a, b)
    return a if _is_const(b, 1) else _div(a, b)


def floordiv(a: Any, b: Any) -> PrimExpr:
    """Floor division, folding constants and division by one."""
    a, b = match_types(a, b)
    return a if _is_const(b, 1) and a.dtype.is_integer else _floordiv(a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    """Floor modulo, folding constants (x % 1 is 0 for integers)."""
    a, b = match_types(a, b)
    if _is_const(b, 1) and a.dtype.is_integer and not a.dtype.is_vector:
        return const(0, a.dtype)
    return _floormod(a, b)


truncdiv = div


def neg(a: Any) -> PrimExpr:
    """-a, written as 0 - a (folded for constants)."""
    a = convert(a)
    if isinstance(a, IntImm):
        return IntImm(a.dtype, _wrap_int(-a.value, a.dtype))
    if isinstance(a, FloatImm):
        return FloatImm(a.dtype, -a.value)
    return Sub(cast(0, a.dtype), a)


def _compare(node_cls: type[CmpOp], op: Callable[[Any, Any], bool]):
    def build(a: Any, b: Any) -> PrimExpr:
        a, b = match_types(a, b)
        if isinstance(a, IntImm | FloatImm) and isinstance(b, IntImm | FloatImm):
            return IntImm(bool_, int(op(a.value, b.value)))
        return node_cls(a, b)

    build.__name__ = node_cls.__name__.lower()
    return build


eq = _compare(EQ, lambda x, y: x == y)
ne = _compare(NE, lambda x, y: x != y)
lt = _compare(LT, lambda x, y: x < y)
le = _compare(LE, lambda x, y: x <= y)
gt = _compare(GT, lambda x, y: x > y)
ge = _compare(GE, lambda x, y: x >= y)


def _as_bool(value: Any) -> PrimExpr:
    value = convert(value)
    if not value.dtype.element.is_bool:
        raise IRTypeError(f"expected a bool expression, got `{value}` of {value.dtype}")
    return value


def logical_and(a: Any, b: Any) -> PrimExpr:
    """a and b, folding constant operands."""
    a, b = _as_bool(a), _as_bool(b)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, IntImm):
            return y if x.value else x
    return And(a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    """a or b, folding constant operands."""
    a, b = _as_bool(a), _as_bool(b)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, IntImm):
            return x if x.value else y
    return Or(a, b)


def logical_not(a: Any) -> PrimExpr:
    """not a, folding a constant operand."""
    a = _as_bool(a)
    if isinstance(a, IntImm):
        return IntImm(bool_, 1 - a.value)
    return Not(a)


def select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:
    """Select(condition, t, f), folding a constant condition."""
    condition = _as_bool(condition)
    true_value, false_value = match_types(true_value, false_value)
    if isinstance(condition, IntImm):
        return true_value if condition.value else false_value
    return Select(condition, true_value, false_value)


def is_const_int(e: Any, value: int | None = None) -> bool:
    """True if `e` is an integer constant (equal to `value`, when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)


def conjuncts(expr: PrimExpr) -> list[PrimExpr]:
    """The operands of a chain of `and`s (none for the constant true)."""
    if isinstance(expr, And):
        return conjuncts(expr.a) + conjuncts(expr.b)
    return [] if is_const_int(expr, 1) else [expr]


def disjuncts(expr: PrimExpr) -> list[PrimExpr]:
    """The operands of a chain of `or`s."""
    if isinstance(expr, Or):
        return disjuncts(expr.a) + disjuncts(expr.b)
    return [expr]


def conjunction(items: Sequence[PrimExpr]) -> PrimExpr:
    """`items[0] and items[1] and ...` (true when there are none)."""
    result: PrimExpr = const(True, "bool")
    for item in items:
        result = logical_and(result, item)
    return result
