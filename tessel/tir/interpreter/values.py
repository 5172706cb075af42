"""Exact value semantics, per dtype.

Representation of a value of each dtype while the interpreter runs:
- scalar int/uint: a Python int, always inside the dtype's range (results wrap as in C);
- scalar bool: a Python bool (or numpy.bool_);
- scalar float: a NumPy scalar of exactly the dtype (np.float16/32/64, ml_dtypes.bfloat16), so
  float32 math is done in float32;
- a vector (lanes > 1): a 1-D NumPy array of the element dtype (integer arrays wrap natively).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from tessel.ir.expr import Add, Div, FloorDiv, FloorMod, Max, Min, Mod, Mul, Sub
from tessel.support.dtype import DataType
from tessel.tir.interpreter.errors import InterpreterError

Fn = Callable[[list], Any]  # a compiled expression or statement: env -> value


def int_wrapper(dtype: DataType) -> Callable[[int], int]:
    """A function mapping any Python int to the value of that bit pattern in `dtype`."""
    mask = (1 << dtype.bits) - 1
    if dtype.is_uint:
        return lambda x: x & mask
    half = 1 << (dtype.bits - 1)
    return lambda x: ((x + half) & mask) - half


def constant(value: int | float, dtype: DataType) -> Any:
    """The interpreter value of an IntImm / FloatImm of a scalar `dtype`."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return dtype.numpy.type(value)
    return int(value)


def garbage(dtype: DataType) -> Any:
    """The fill of fresh memory: NaN for floats, the largest value for integers, True for bool,
    so that reading memory nobody wrote shows up in results."""
    if dtype.is_float:
        return math.nan
    if dtype.is_bool:
        return True
    return dtype.element.max_value()


def from_array_element(dtype: DataType) -> Callable[[Any], Any] | None:
    """The conversion of a scalar read from a NumPy array to the interpreter's representation
    (None: the NumPy scalar already is it, as for floats)."""
    if dtype.is_float or dtype.is_vector:
        return None
    return bool if dtype.is_bool else int


def _zero_divisor() -> InterpreterError:
    return InterpreterError("integer division by zero", rule="interpreter.division-by-zero")


def _trunc_div(x: int, y: int) -> int:
    if y == 0:
        raise _zero_divisor()
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y >= 0) else -quotient


def _trunc_mod(x: int, y: int) -> int:
    return x - y * _trunc_div(x, y)


def _floor_div(x: int, y: int) -> int:
    if y == 0:
        raise _zero_divisor()
    return x // y


def _floor_mod(x: int, y: int) -> int:
    if y == 0:
        raise _zero_divisor()
    return x % y


_INT_OPS: dict[type, Callable[..., Any]] = {
    Add: operator.add, Sub: operator.sub, Mul: operator.mul, Div: _trunc_div, Mod: _trunc_mod,
    FloorDiv: _floor_div, FloorMod: _floor_mod, Min: min, Max: max,
}  # fmt: skip


def _float_floordiv(x: Any, y: Any) -> Any:
    return np.floor(x / y)


def _float_floormod(x: Any, y: Any) -> Any:
    return x - np.floor(x / y) * y  # TVM's definition, as the C backend computes it


_FLOAT_OPS: dict[type, Callable[..., Any]] = {
    Add: operator.add, Sub: operator.sub, Mul: operator.mul, Div: operator.truediv,
    Mod: np.fmod, FloorDiv: _float_floordiv, FloorMod: _float_floormod,
    # NumPy's semantics, which the C prelude's helpers copy: a NaN operand propagates, and of
    # two equal operands (0.0 and -0.0) the result is the second.
    Min: np.minimum, Max: np.maximum,
}  # fmt: skip


def _check_vector_divisor(y: np.ndarray) -> None:
    if not np.all(y):
        raise _zero_divisor()


def _vector_floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_vector_divisor(y)
    return np.floor_divide(x, y)


def _vector_floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_vector_divisor(y)
    return np.mod(x, y)


def _vector_trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    quotient = _vector_floor_div(x, y)
    inexact_negative = ((x - quotient * y) != 0) & ((x < 0) != (y < 0))
    return quotient + inexact_negative.astype(x.dtype)


def _vector_trunc_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - y * _vector_trunc_div(x, y)


_INT_VECTOR_OPS: dict[type, Callable[..., Any]] = {
    Add: np.add, Sub: np.subtract, Mul: np.multiply, Div: _vector_trunc_div,
    Mod: _vector_trunc_mod, FloorDiv: _vector_floor_div, FloorMod: _vector_floor_mod,
    Min: np.minimum, Max: np.maximum,
}  # fmt: skip


def _without_overflow(op: Callable[..., Any], dtype: DataType) -> Callable[..., Any]:
    """`op` (a division or modulo of a signed type) refusing the dtype's minimum divided by -1,
    which overflows (C leaves it undefined, and x86 traps on it as on division by zero)."""
    low = dtype.element.min_value()

    def fail() -> InterpreterError:
        return InterpreterError(
            f"integer division overflow: {low} divided by -1 does not fit in {dtype.element}",
            rule="interpreter.division-overflow",
        )

    if dtype.is_vector:

        def vector_op(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            if np.any((y == -1) & (x == low)):
                raise fail()
            return op(x, y)

        return vector_op

    def scalar_op(x: int, y: int) -> int:
        if y == -1 and x == low:
            raise fail()
        return op(x, y)

    return scalar_op


def binary_function(node_cls: type, dtype: DataType) -> Callable[..., Any]:
    """The function computing `node_cls` (Add, FloorDiv, ...) on two values of `dtype`."""
    if dtype.is_float:
        return _FLOAT_OPS[node_cls]
    if dtype.is_vector:
        op = _INT_VECTOR_OPS[node_cls]
    else:
        op = _INT_OPS[node_cls]
        if node_cls not in (Min, Max) and not dtype.is_bool:
            wrap = int_wrapper(dtype)
            op = _wrapped(op, wrap)
    if node_cls in (Div, Mod, FloorDiv, FloorMod) and dtype.is_int:
        return _without_overflow(op, dtype)
    return op


def _wrapped(
    op: Callable[[int, int], int], wrap: Callable[[int], int]
) -> Callable[[int, int], int]:
    return lambda x, y: wrap(op(x, y))
