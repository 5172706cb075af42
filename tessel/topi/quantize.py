"""Affine quantisation to small integers (ONNX QuantizeLinear, the requantisation of QLinearMatMul
and QLinearConv), as te computes.

Both round half to even (C's nearbyint in the default rounding mode, as ONNX and onnxruntime
require) and saturate to the output dtype. The arithmetic is onnxruntime's (MLAS): the rounded
value plus the zero point is clamped in floating point, where every bound of an 8- or 16-bit
integer dtype is exact, and only then converted, so no conversion overflows. The scale and the
zero point broadcast against the data (NumPy's rules): a scalar per tensor, a [C, 1, ...] tensor
per axis, a full tensor per block.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.te.tensor import Tensor
from tessel.topi.broadcast import BROADCAST, broadcast_indices, broadcast_shape
from tessel.topi.utils import expect_tensor, get_const_tuple, op_error

QUANTIZED_DTYPES = ("int8", "uint8", "int16", "uint16")  # their bounds are exact in float32


def _check(op: str, data: Tensor, scale: Tensor, zero_point: Tensor, out_dtype: str) -> None:
    """The dtypes and shapes both operators need: a float scale, the zero point in `out_dtype`,
    both broadcasting to the shape of `data`."""
    if out_dtype not in QUANTIZED_DTYPES:
        raise op_error(op, "out_dtype", f"expected one of {QUANTIZED_DTYPES}, got {out_dtype!r}")
    if not DataType.of(scale.dtype).is_float:
        raise op_error(op, "scale", f"expected a float tensor, got {scale.dtype}")
    if str(zero_point.dtype) != out_dtype:
        raise op_error(op, "zero_point", f"has dtype {zero_point.dtype}, not {out_dtype}")
    for name, operand in (("scale", scale), ("zero_point", zero_point)):
        shape = broadcast_shape(data.shape, operand.shape, op, ("data", name))
        if get_const_tuple(shape) != get_const_tuple(data.shape):
            raise op_error(
                op,
                name,
                f"shape {list(get_const_tuple(operand.shape))} must "
                f"broadcast to the shape of data {list(get_const_tuple(data.shape))}",
            )


def _saturate(rounded: PrimExpr, zero_point: PrimExpr, out_dtype: str) -> PrimExpr:
    """rounded + zero_point (in rounded's float dtype), clamped to `out_dtype` and converted."""
    info = np.iinfo(out_dtype)
    shifted = builders.add(rounded, builders.cast(zero_point, rounded.dtype))
    low = builders.const(int(info.min), rounded.dtype)
    high = builders.const(int(info.max), rounded.dtype)
    return builders.cast(builders.max_value(builders.min_value(shifted, high), low), out_dtype)


def _affine(
    op: str,
    data: Tensor,
    scale: Tensor,
    zero_point: Tensor,
    out_dtype: str,
    scaled: Callable[[PrimExpr, PrimExpr], PrimExpr],
) -> Tensor:
    """saturate(nearbyint(scaled(data, scale)) + zero_point) for every element of `data`."""

    def element(*i: PrimExpr) -> PrimExpr:
        s = scale(*broadcast_indices(scale.shape, i))
        z = zero_point(*broadcast_indices(zero_point.shape, i))
        return _saturate(te.nearbyint(scaled(data(*i), s)), z, out_dtype)

    return te.compute(data.shape, element, name=f"T_{op}", tag=BROADCAST)


def quantize(data: Tensor, scale: Tensor, zero_point: Tensor, out_dtype: str) -> Tensor:
    """ONNX QuantizeLinear: saturate(round_half_even(data / scale) + zero_point) in `out_dtype`;
    `data` and `scale` share a float dtype."""
    data = expect_tensor("quantize", "data", data)
    _check("quantize", data, scale, zero_point, out_dtype)
    if data.dtype != scale.dtype:
        raise op_error("quantize", "scale", f"has dtype {scale.dtype}, not {data.dtype} of data")
    return _affine("quantize", data, scale, zero_point, out_dtype, builders.div)


def requantize(data: Tensor, multiplier: Tensor, zero_point: Tensor, out_dtype: str) -> Tensor:
    """An int32 accumulator to `out_dtype`: saturate(round_half_even(float(data) * multiplier)
    + zero_point), the multiplier (input scales over the output scale) in a float dtype."""
    data = expect_tensor("requantize", "data", data)
    _check("requantize", data, multiplier, zero_point, out_dtype)
    if str(data.dtype) != "int32":
        raise op_error("requantize", "data", f"expected an int32 tensor, got {data.dtype}")

    def scaled(value: PrimExpr, factor: PrimExpr) -> PrimExpr:
        return builders.mul(builders.cast(value, factor.dtype), factor)

    return _affine("requantize", data, multiplier, zero_point, out_dtype, scaled)
