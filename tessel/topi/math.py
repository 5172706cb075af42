"""Elementwise unary operators (TVM's tvm.topi math functions): one compute per operator, reading
one element of the input for each element of the output."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import FloatImm, IntImm, PrimExpr
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError, UserError
from tessel.te.tensor import Tensor
from tessel.tir import builtin
from tessel.topi.utils import expect_tensor, op_error

ELEMWISE = "elemwise"  # TVM's tag.ELEMWISE: one output element from the same input element


def elementwise(op: str, x: Tensor, fexpr: Callable[[PrimExpr], PrimExpr]) -> Tensor:
    """The tensor `fexpr(x[i])` for every index `i` of `x`, named `T_<op>`, tagged elemwise."""
    return te.compute(x.shape, lambda *i: fexpr(x(*i)), name=f"T_{op}", tag=ELEMWISE)


def _float_tensor(op: str, x: Any) -> Tensor:
    """`x`, checked to be a tensor of a float dtype (the math functions are defined on floats)."""
    x = expect_tensor(op, "x", x)
    if not DataType.of(x.dtype).is_float:
        raise op_error(
            op,
            "x",
            f"expected a float tensor, got {x.dtype}",
            hint=f'cast the input first: topi.{op}(topi.cast(x, "float32"))',
        )
    return x


def _float_unary(op: str, scalar: Callable[[Any], PrimExpr]) -> Callable[[Tensor], Tensor]:
    def apply(x: Tensor) -> Tensor:
        return elementwise(op, _float_tensor(op, x), scalar)

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = f"The elementwise {op} of a float tensor."
    return apply


exp = _float_unary("exp", te.exp)
log = _float_unary("log", te.log)
sqrt = _float_unary("sqrt", te.sqrt)
rsqrt = _float_unary("rsqrt", te.rsqrt)
erf = _float_unary("erf", te.erf)
tanh = _float_unary("tanh", te.tanh)
sigmoid = _float_unary("sigmoid", te.sigmoid)


def _integer_identity(op: str, scalar: Callable[[Any], PrimExpr]) -> Callable[[Tensor], Tensor]:
    """floor/ceil/trunc: the float intrinsic, and the value itself for integers (as TVM does)."""

    def apply(x: Tensor) -> Tensor:
        x = expect_tensor(op, "x", x)
        return elementwise(op, x, scalar if DataType.of(x.dtype).is_float else (lambda v: v))

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = f"The elementwise {op} of a tensor (integers are returned unchanged)."
    return apply


def _float_test(op: str) -> Callable[[Tensor], Tensor]:
    """isnan/isinf/isfinite: a bool tensor; integers are never NaN or infinite (as in TVM)."""

    def apply(x: Tensor) -> Tensor:
        x = expect_tensor(op, "x", x)
        if DataType.of(x.dtype).is_float:
            return elementwise(op, x, lambda v: builtin.float_test(op, v))
        verdict = builders.const(op == "isfinite", "bool")
        return elementwise(op, x, lambda v: verdict)

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = f"The elementwise {op} of a tensor, as bools."
    return apply


isnan = _float_test("isnan")
isinf = _float_test("isinf")
isfinite = _float_test("isfinite")


floor = _integer_identity("floor", te.floor)
ceil = _integer_identity("ceil", te.ceil)
trunc = _integer_identity("trunc", te.trunc)


def _round_half_away(v: PrimExpr) -> PrimExpr:
    # TVM lowers tir.round to C's round()/llvm.round: halfway cases go away from zero (2.5 -> 3,
    # -2.5 -> -3), unlike NumPy's and T.round's half-to-even. x - trunc(x) is exact in floating
    # point, so the test below has no rounding error (floor(x + 0.5) would round 0.49999997 up).
    whole = te.trunc(v)
    step = builders.select(
        builders.lt(v, 0), builders.const(-1, v.dtype), builders.const(1, v.dtype)
    )
    return builders.select(
        builders.ge(te.abs(v - whole), builders.const(0.5, v.dtype)), whole + step, whole
    )


def round(x: Tensor) -> Tensor:  # noqa: A001  (TVM's name)
    """Round to the nearest integer, halfway cases away from zero as TVM's topi.round (C's
    round()); integers are returned unchanged. NumPy's np.round rounds halfway cases to even."""
    x = expect_tensor("round", "x", x)
    return elementwise(
        "round", x, _round_half_away if DataType.of(x.dtype).is_float else (lambda v: v)
    )


def abs(x: Tensor) -> Tensor:  # noqa: A001  (TVM's name)
    """|x| elementwise (unsigned integers unchanged)."""
    return elementwise("abs", expect_tensor("abs", "x", x), te.abs)


def negative(x: Tensor) -> Tensor:
    """-x elementwise (integers wrap around, as in C)."""
    return elementwise("negative", expect_tensor("negative", "x", x), builders.neg)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element, in the input's dtype (NaN for NaN, as NumPy)."""
    x = expect_tensor("sign", "x", x)

    def scalar(v: PrimExpr) -> PrimExpr:
        one, zero = builders.const(1, v.dtype), builders.const(0, v.dtype)
        positive = builders.select(builders.gt(v, zero), one, zero)
        if DataType.of(x.dtype).is_uint:
            return positive
        signed = builders.select(builders.lt(v, zero), builders.const(-1, v.dtype), positive)
        if DataType.of(x.dtype).is_float:  # NaN is neither: it stays NaN, as in NumPy
            return builders.select(builtin.float_test("isnan", v), v, signed)
        return signed

    return elementwise("sign", x, scalar)


def identity(x: Tensor) -> Tensor:
    """A copy of `x`."""
    return elementwise("identity", expect_tensor("identity", "x", x), lambda v: v)


def _bound(op: str, argument: str, value: Any, dtype: str) -> PrimExpr:
    """A clip bound as a scalar of the tensor's dtype."""
    if isinstance(value, Tensor) or not isinstance(value, int | float | PrimExpr):
        raise op_error(
            op, argument, f"expected a number or a scalar expression, got {type(value).__name__}"
        )
    try:
        return (
            builders.cast(value, dtype)
            if isinstance(value, PrimExpr)
            else builders.const(value, dtype)
        )
    except IRTypeError as err:
        raise op_error(op, argument, f"{value!r} cannot be represented in {dtype}") from err


def clip(x: Tensor, a_min: Any, a_max: Any) -> Tensor:
    """Each element limited to [a_min, a_max]: max(min(x, a_max), a_min), as TVM computes it."""
    x = expect_tensor("clip", "x", x)
    low, high = _bound("clip", "a_min", a_min, x.dtype), _bound("clip", "a_max", a_max, x.dtype)
    if (
        isinstance(low, IntImm | FloatImm)
        and isinstance(high, IntImm | FloatImm)
        and low.value > high.value
    ):
        raise op_error("clip", "a_min", f"a_min ({low.value}) is greater than a_max ({high.value})")
    return elementwise("clip", x, lambda v: builders.max_value(builders.min_value(v, high), low))


def cast(x: Any, dtype: str) -> Any:
    """`x` converted to `dtype` elementwise (a tensor), or a scalar converted (an expression),
    as TVM's topi.cast. Float to integer truncates toward zero; anything to bool is `!= 0`."""
    try:
        target = str(DataType.of(dtype))
    except UserError as err:
        raise op_error("cast", "dtype", f"{dtype!r} is not a data type") from err
    if isinstance(x, Tensor):
        return elementwise("cast", x, lambda v: _cast_scalar(v, target))
    if isinstance(x, int | float | PrimExpr):
        return _cast_scalar(builders.convert(x), target)
    raise op_error("cast", "x", f"expected a te.Tensor or a scalar, got {type(x).__name__}")


def _cast_scalar(v: PrimExpr, dtype: str) -> PrimExpr:
    if DataType.of(dtype).is_bool and not v.dtype.is_bool:
        return builders.ne(v, builders.const(0, v.dtype))  # C's and NumPy's conversion to bool
    return builders.cast(v, dtype)


sin = _float_unary("sin", te.sin)
cos = _float_unary("cos", te.cos)
tan = _float_unary("tan", te.tan)
asin = _float_unary("asin", te.asin)
acos = _float_unary("acos", te.acos)
atan = _float_unary("atan", te.atan)
sinh = _float_unary("sinh", te.sinh)
cosh = _float_unary("cosh", te.cosh)

# Beyond 2**28, x*x + 1 == x*x in double and the inverse hyperbolic functions are log(2|x|).
_HUGE = 2.0**28
_LN2 = 0.6931471805599453


def _f(value: float, like: PrimExpr) -> PrimExpr:
    """The constant `value` in the float dtype of `like`."""
    return builders.const(value, like.dtype)


def _asinh(v: PrimExpr) -> PrimExpr:
    # glibc's formulation: log1p keeps small arguments exact, the sign is restored at the end
    # (asinh is odd, and log of x + sqrt(x*x + 1) would cancel for negative x).
    a = te.abs(v)
    square = a * a
    near = te.log1p(a + square / (_f(1, v) + te.sqrt(square + _f(1, v))))
    far = te.log(a) + _f(_LN2, v)
    magnitude = builders.select(builders.gt(a, _f(_HUGE, v)), far, near)
    return builtin.math_binary("copysign", magnitude, v)


def _acosh(v: PrimExpr) -> PrimExpr:
    # log1p near 1, where x + sqrt(x*x - 1) loses the digits of x - 1; NaN below 1.
    t = v - _f(1, v)
    near = te.log1p(t + te.sqrt(t * t + _f(2, v) * t))
    middle = te.log(_f(2, v) * v - _f(1, v) / (v + te.sqrt(v * v - _f(1, v))))
    far = te.log(v) + _f(_LN2, v)
    value = builders.select(
        builders.gt(v, _f(_HUGE, v)), far, builders.select(builders.gt(v, _f(2, v)), middle, near)
    )
    return builders.select(builders.lt(v, _f(1, v)), _f(math.nan, v), value)


def _atanh(v: PrimExpr) -> PrimExpr:
    # 0.5 * log((1 + a) / (1 - a)) through log1p (exact for small a), odd in the sign.
    a = te.abs(v)
    magnitude = _f(0.5, v) * te.log1p(_f(2, v) * a / (_f(1, v) - a))
    return builtin.math_binary("copysign", magnitude, v)


asinh = _float_unary("asinh", _asinh)
acosh = _float_unary("acosh", _acosh)
atanh = _float_unary("atanh", _atanh)


def round_half_to_even(x: Tensor) -> Tensor:
    """Round to the nearest integer, halfway cases to even (NumPy's np.round, ONNX's Round: C's
    nearbyint in the default rounding mode); integers are returned unchanged."""
    x = expect_tensor("round_half_to_even", "x", x)
    scalar = te.nearbyint if DataType.of(x.dtype).is_float else (lambda v: v)
    return elementwise("round_half_to_even", x, scalar)


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) of a float tensor, as max(x, 0) + log1p(exp(-|x|)): exp never overflows
    and small results keep their digits."""

    def scalar(v: PrimExpr) -> PrimExpr:
        positive = builders.max_value(v, _f(0, v))
        return positive + te.log1p(te.exp(builders.neg(te.abs(v))))

    return elementwise("softplus", _float_tensor("softplus", x), scalar)
