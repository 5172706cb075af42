"""Integer quantisation operators: qnn.quantize (float to int8/uint8/int16/uint16) and
qnn.requantize (an int32 accumulator to the same), both rounding half to even and saturating.

Unlike Relay's qnn.quantize, whose scale is a scalar or a vector along `axis`, the scale and the
zero point broadcast against the data: per tensor, per axis ([C, 1, ...]) and per block (a full
tensor) are one operator. Dequantisation needs no operator of its own: it is
(int32(x) - int32(zero_point)) * scale, exact in the existing elementwise operators.
"""

from __future__ import annotations

import numpy as np

from tessel.graph.op.common import broadcast_shapes, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.support.dtype import DataType
from tessel.topi import quantize as topi_quantize

QUANTIZED_DTYPES = topi_quantize.QUANTIZED_DTYPES


def _affine_rel(args: Args, attrs: Attrs, data_rule: str) -> Type:
    """The output: `data`'s shape in `out_dtype`; the scale a float, the zero point of
    out_dtype, both broadcasting to data."""
    data, scale, zero_point = args.tensor("data"), args.tensor("scale"), args.tensor("zero_point")
    if attrs.out_dtype not in QUANTIZED_DTYPES:
        raise args.error(
            "out_dtype", f"must be one of {list(QUANTIZED_DTYPES)}, got {attrs.out_dtype!r}"
        )
    if not DataType.of(scale.dtype).is_float:
        raise args.error("scale", f"must be a float tensor, got dtype {scale.dtype}")
    if zero_point.dtype != attrs.out_dtype:
        raise args.error(
            "zero_point", f"has dtype {zero_point.dtype}, not out_dtype {attrs.out_dtype}"
        )
    if data_rule == "float":
        args.same_dtype("scale", "data")
    elif data.dtype != "int32":
        raise args.error("data", f"must be an int32 accumulator, got dtype {data.dtype}")
    if broadcast_shapes(args, ("data", "scale", "zero_point")) != data.shape:
        raise args.error(
            "scale",
            f"and zero_point (shapes {list(scale.shape)} and "
            f"{list(zero_point.shape)}) must broadcast to data's {list(data.shape)}",
        )
    return same_as(data, dtype=attrs.out_dtype)


def _saturated(rounded: np.ndarray, zero_point: np.ndarray, out_dtype: str) -> np.ndarray:
    """rounded + zero_point in rounded's float dtype, clamped to out_dtype and converted."""
    info = np.iinfo(out_dtype)
    shifted = rounded + zero_point.astype(rounded.dtype)
    return np.clip(shifted, info.min, info.max).astype(out_dtype)


def _quantize_ref(data, scale, zero_point, *, attrs: Attrs) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return _saturated(np.rint(data / scale), zero_point, attrs.out_dtype)


def _requantize_ref(data, multiplier, zero_point, *, attrs: Attrs) -> np.ndarray:
    # float(int32) * multiplier in the multiplier's dtype, as onnxruntime's requantisation
    scaled = data.astype(multiplier.dtype) * multiplier
    return _saturated(np.rint(scaled), zero_point, attrs.out_dtype)


OPERATORS = (
    OpDef(
        "qnn.quantize",
        ("data", "scale", "zero_point"),
        (Attr("out_dtype", "dtype", "int8"),),
        lambda args, attrs: _affine_rel(args, attrs, "float"),
        lambda d, s, z, *, attrs: topi_quantize.quantize(d, s, z, attrs.out_dtype),
        _quantize_ref,
        OpPattern.BROADCAST,
        "saturate(round_half_even(data / scale) + zero_point) in out_dtype.",
    ),
    OpDef(
        "qnn.requantize",
        ("data", "scale", "zero_point"),
        (Attr("out_dtype", "dtype", "int8"),),
        lambda args, attrs: _affine_rel(args, attrs, "int32"),
        lambda d, s, z, *, attrs: topi_quantize.requantize(d, s, z, attrs.out_dtype),
        _requantize_ref,
        OpPattern.BROADCAST,
        "saturate(round_half_even(float(data) * scale) + zero_point): an int32 accumulator "
        "scaled by (input scales / output scale) into out_dtype.",
    ),
)

__all__ = ["OPERATORS", "QUANTIZED_DTYPES"]
