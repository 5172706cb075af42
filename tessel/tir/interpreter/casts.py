"""Cast semantics: C conversions, exactly (integers wrap; float to int truncates toward zero and
is an error where C leaves it undefined: NaN, infinity, or a value out of range)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tessel.support.dtype import DataType
from tessel.tir.interpreter.errors import InterpreterError
from tessel.tir.interpreter.values import int_wrapper


def _undefined_cast(value: Any, dst: DataType) -> InterpreterError:
    return InterpreterError(
        f"cast of {value} to {dst} is undefined (the value is not finite or out of range)",
        rule="interpreter.cast-range",
    )


def _float_to_int(dst: DataType) -> Callable[[Any], int]:
    low, high = dst.min_value(), dst.max_value()

    def convert(value: Any) -> int:
        if not math.isfinite(value):
            raise _undefined_cast(value, dst)
        truncated = math.trunc(float(value))
        if not low <= truncated <= high:
            raise _undefined_cast(value, dst)
        return truncated

    return convert


def _int_to_float(src: DataType, dst: DataType) -> Callable[[Any], Any]:
    to_float = dst.numpy.type
    if src.bits <= 32:
        return to_float  # exact in float64 first, so NumPy's conversion rounds once
    src_numpy = src.numpy
    # int64 -> float32 through float64 would round twice; let NumPy convert directly.
    return lambda value: np.array(value, src_numpy).astype(dst.numpy)[()]


def scalar_cast(src: DataType, dst: DataType) -> Callable[[Any], Any]:
    """The conversion of one scalar value from `src` to `dst`."""
    if dst.is_bool:
        return bool
    if dst.is_float:
        if src.is_integer:
            return _int_to_float(src, dst)
        return dst.numpy.type
    if src.is_float:
        return _float_to_int(dst)
    wrap = int_wrapper(dst)
    return lambda value: wrap(int(value))


def _vector_float_to_int(dst: DataType) -> Callable[[np.ndarray], np.ndarray]:
    low, high = dst.min_value(), dst.max_value()  # high + 1 is a power of two: exact in float64

    def convert(values: np.ndarray) -> np.ndarray:
        truncated = np.trunc(values.astype(np.float64))
        in_range = np.isfinite(truncated) & (truncated >= low) & (truncated < high + 1)
        if not np.all(in_range):
            raise _undefined_cast(values, dst)
        return values.astype(dst.numpy)

    return convert


def vector_cast(src: DataType, dst: DataType) -> Callable[[np.ndarray], np.ndarray]:
    """The conversion of a vector from `src` to `dst` (same lanes), lane by lane."""
    if src.is_float and dst.is_integer:
        return _vector_float_to_int(dst)
    if dst.is_bool:
        return lambda values: values != 0
    dst_numpy = dst.numpy
    return lambda values: values.astype(dst_numpy)


def cast_function(src: DataType, dst: DataType) -> Callable[[Any], Any]:
    """The conversion from `src` to `dst` for the interpreter's value representation."""
    if _through_float32(src.element, dst.element):
        # As the C backend converts (c_expr.py): bfloat16 only to and from float32.
        wide = DataType("float", 32, dst.lanes)
        first, second = cast_function(src, wide), cast_function(wide, dst)
        return lambda value: second(first(value))
    if dst.is_vector:
        return vector_cast(src.element, dst.element)
    return scalar_cast(src, dst)


def _through_float32(src: DataType, dst: DataType) -> bool:
    """True for a conversion between bfloat16 and a type other than itself and float32."""
    if src == dst or not (src.is_bfloat16 or dst.is_bfloat16):
        return False
    return DataType("float", 32) not in (src, dst)
