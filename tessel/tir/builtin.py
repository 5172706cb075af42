"""Builtin operations called through `Call`: undef, assume, likely, if_then_else, math, bits.

Each op is one module-level `Op`; the functions below build calls with the right dtype.
"""

from __future__ import annotations

from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Call, Cast, Op, PrimExpr, StringImm
from tessel.support.dtype import DataType, bool_, int32
from tessel.support.errors import IRTypeError
from tessel.support.names import is_c_identifier

undef_op = Op("tir.undef")
assume_op = Op("tir.assume")
likely_op = Op("tir.likely")
if_then_else_op = Op("tir.if_then_else")
ret_op = Op("tir.ret")
call_extern_op = Op("tir.call_extern")

# Unary float math: result dtype is the argument's dtype.
MATH_UNARY = {
    name: Op(f"tir.{name}")
    for name in (
        "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
        "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "erf", "sigmoid", "fabs",
        "floor", "ceil", "round", "trunc", "nearbyint",
    )
}  # fmt: skip
MATH_BINARY = {name: Op(f"tir.{name}") for name in ("pow", "atan2", "fmod", "hypot", "copysign")}
FLOAT_TESTS = {name: Op(f"tir.{name}") for name in ("isnan", "isinf", "isfinite")}
BITWISE_BINARY = {
    name: Op(f"tir.{name}")
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")
}
bitwise_not_op = Op("tir.bitwise_not")

ALL_OPS: dict[str, Op] = {
    op.name: op
    for op in (
        undef_op, assume_op, likely_op, if_then_else_op, ret_op, call_extern_op, bitwise_not_op,
        *MATH_UNARY.values(), *MATH_BINARY.values(), *FLOAT_TESTS.values(),
        *BITWISE_BINARY.values(),
    )
}  # fmt: skip


def undef(dtype: DataType | str = "int32") -> PrimExpr:
    """An unspecified value (padding nobody may observe); stores of it are removed."""
    return Call(DataType.of(dtype), undef_op, ())


def is_undef(expr: Any) -> bool:
    """True if `expr` is T.undef(), possibly cast (`T.Cast("float32", T.undef())` is as
    unspecified as the undef it converts)."""
    while isinstance(expr, Cast):
        expr = expr.value
    return isinstance(expr, Call) and expr.op is undef_op


def assume(condition: Any) -> PrimExpr:
    """A compile-time fact for the analyzer (a buffer constraint); removed before codegen."""
    return Call(int32, assume_op, (_bool(condition),))


def likely(condition: Any) -> PrimExpr:
    """`condition`, hinted as usually true."""
    return Call(bool_, likely_op, (_bool(condition),))


def if_then_else(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:
    """`true_value` if `condition` else `false_value`, evaluating only the chosen side."""
    condition = _bool(condition)
    true_value, false_value = builders.match_types(true_value, false_value)
    if builders.is_const_int(condition):
        return true_value if condition.value else false_value  # type: ignore[attr-defined]  # IntImm
    return Call(true_value.dtype, if_then_else_op, (condition, true_value, false_value))


def math_unary(name: str, x: Any) -> PrimExpr:
    """A unary math intrinsic (exp, log, sqrt, tanh, erf, sigmoid, floor, ...) on a float."""
    x = builders.convert(x)
    if not x.dtype.is_float:
        raise IRTypeError(f"T.{name} needs a float argument, got `{x}` of {x.dtype}", rule="call.dtype")
    return Call(x.dtype, MATH_UNARY[name], (x,))


def math_binary(name: str, x: Any, y: Any) -> PrimExpr:
    """A binary math intrinsic (pow, atan2, fmod, hypot, copysign) on floats."""
    x, y = builders.match_types(x, y)
    if not x.dtype.is_float:
        raise IRTypeError(f"T.{name} needs float arguments, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, MATH_BINARY[name], (x, y))


def float_test(name: str, x: Any) -> PrimExpr:
    """isnan / isinf / isfinite of a float."""
    x = builders.convert(x)
    return Call(bool_.with_lanes(x.dtype.lanes), FLOAT_TESTS[name], (x,))


def bitwise(name: str, x: Any, y: Any) -> PrimExpr:
    """A bitwise operation or shift on integers."""
    x, y = builders.match_types(x, y)
    if not x.dtype.is_integer:
        raise IRTypeError(f"T.{name} needs integer arguments, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, BITWISE_BINARY[name], (x, y))


def bitwise_not(x: Any) -> PrimExpr:
    """~x on an integer."""
    x = builders.convert(x)
    if not x.dtype.is_integer:
        raise IRTypeError(f"T.bitwise_not needs an integer, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, bitwise_not_op, (x,))


def abs_value(x: Any) -> PrimExpr:
    """|x|: fabs for floats, a select for integers."""
    x = builders.convert(x)
    if x.dtype.is_float:
        return Call(x.dtype, MATH_UNARY["fabs"], (x,))
    if x.dtype.is_uint:
        return x
    return builders.select(builders.ge(x, 0), x, builders.neg(x))


def call_extern(dtype: DataType | str, name: str, *args: Any) -> PrimExpr:
    """A call of an external C function by name (an ASCII C identifier, not a keyword)."""
    if not is_c_identifier(name):
        raise IRTypeError(
            f"call_extern needs the name of a C function, got {name!r}",
            rule="call_extern.name",
            hint="a C identifier: ASCII letters, digits and `_`, not starting with a digit, "
            "and not a C keyword",
        )
    return Call(DataType.of(dtype), call_extern_op, (StringImm(name), *map(builders.convert, args)))


def _bool(condition: Any) -> PrimExpr:
    condition = builders.convert(condition)
    if not condition.dtype.is_bool:
        raise IRTypeError(f"expected a bool condition, got `{condition}` of {condition.dtype}")
    return condition


