"""Quantisation: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear here; the integer
products QLinearMatMul, QLinearConv, MatMulInteger and ConvInteger in quantize_products.

Tessel holds int8, uint8, int16, uint16 and int32 tensors; float8, int4/uint4, int2/uint2 and
float4 are refused when the importer meets a tensor of that type. QuantizeLinear is
qnn.quantize (round half to even, saturate); DequantizeLinear is (int32(x) - int32(zero_point))
converted to the output type and multiplied by the scale, the multiplication in the output type
as ONNX says. A QDQ model (DequantizeLinear -> Conv -> QuantizeLinear) therefore runs as the
float computation on dequantised values whose result is quantised, which is what it means;
DequantizeLinear of a constant weight folds at import to a float weight.
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.quantize_params import (
    broadcast_param,
    float_operand,
    shifted_int32,
)
from tessel.frontend.onnx.converters.quantize_products import (
    convert_conv_integer,
    convert_matmul_integer,
    convert_qlinear_conv,
    convert_qlinear_matmul,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.frontend.onnx.values import dtype_of_elem_type
from tessel.graph.expr import Constant, Expr
from tessel.graph.op.quantize import QUANTIZED_DTYPES

Result = Expr | np.ndarray | list[Expr]


def _granularity(node: OnnxNode) -> tuple[int, int]:
    """(axis, block_size): the per-axis axis (1 by default) and the block size (0: none)."""
    return int(node.attr("axis", 1)), int(node.attr("block_size", 0))


def _division_dtype(node: OnnxNode) -> str:
    """The float dtype x / y_scale is computed in: `precision` when given (opset 25), else the
    scale's dtype, as ONNX specifies."""
    precision = node.attr("precision", 0)
    if precision:
        return dtype_of_elem_type(int(precision), f"{node.op_type} node `{node.name}`'s precision")
    return node.input(1).type.dtype


def convert_quantize_linear(node: OnnxNode) -> Result:
    """QuantizeLinear: qnn.quantize(x / y_scale), rounded half to even, plus the zero point,
    saturated to int8/uint8/int16/uint16 (uint8 without a zero point or output_dtype)."""
    out_dtype = node.out_type().dtype
    if out_dtype not in QUANTIZED_DTYPES:
        raise node.error(
            f"quantising to {out_dtype}: Tessel quantises to {', '.join(QUANTIZED_DTYPES)}"
        )
    shape = node.shape(0)
    axis, block_size = _granularity(node)
    dtype = _division_dtype(node)
    scale = broadcast_param(node, 1, shape, axis, block_size, "y_scale")
    if node.has_input(2):
        zero_point = broadcast_param(node, 2, shape, axis, block_size, "y_zero_point").expr
    else:
        zero_point = const(np.zeros((), out_dtype))
    operands = (float_operand(node.input(0), dtype), float_operand(scale, dtype), zero_point)
    if all(isinstance(e, Constant) for e in operands):
        return fold("qnn.quantize", *(e.data for e in operands), out_dtype=out_dtype)
    return call("qnn.quantize", *operands, out_dtype=out_dtype)


def convert_dequantize_linear(node: OnnxNode) -> Result:
    """DequantizeLinear: (int32(x) - int32(x_zero_point)) * x_scale in the output dtype (the
    scale's, or output_dtype's from opset 23); a constant weight folds."""
    out_dtype = node.out_type().dtype
    shape = node.shape(0)
    axis, block_size = _granularity(node)
    zero_point = (
        broadcast_param(node, 2, shape, axis, block_size, "x_zero_point")
        if node.has_input(2)
        else None
    )
    shifted = shifted_int32(node, node.input(0), zero_point)
    scale = broadcast_param(node, 1, shape, axis, block_size, "x_scale")
    if shifted.is_constant and scale.is_constant:
        return shifted.data.astype(out_dtype) * scale.data.astype(out_dtype)
    return call("multiply", float_operand(shifted, out_dtype), float_operand(scale, out_dtype))


def convert_dynamic_quantize_linear(node: OnnxNode) -> Result:
    """DynamicQuantizeLinear: uint8 quantisation with the scale and zero point of x's range
    extended to 0: scale = (max - min) / 255 (1 when the range is empty, as onnxruntime),
    zero point = saturate(round(-min / scale)); both computed in the graph."""
    x = node.expr(0)
    if node.input(0).type.dtype != "float32":
        raise node.error(f"input of dtype {node.input(0).type.dtype}: ONNX defines float32 only")
    zero = const(np.float32(0))
    high = call("maximum", call("max", x), zero)
    low = call("minimum", call("min", x), zero)
    span = call("divide", call("subtract", high, low), const(np.float32(255)))
    scale = call("where", call("equal", high, low), const(np.float32(1)), span)
    zero_point = call(
        "qnn.quantize", call("negative", low), scale, const(np.uint8(0)), out_dtype="uint8"
    )
    return [call("qnn.quantize", x, scale, zero_point, out_dtype="uint8"), scale, zero_point]


TABLE: dict[str, tuple[Entry, ...]] = {
    # quantise and dequantise (per axis from 13, blocked from 21, output_dtype from 21/23)
    "QuantizeLinear": every_opset(convert_quantize_linear, first=10),
    "DequantizeLinear": every_opset(convert_dequantize_linear, first=10),
    "DynamicQuantizeLinear": every_opset(convert_dynamic_quantize_linear, first=11),
    # integer products
    "MatMulInteger": every_opset(convert_matmul_integer, first=10),
    "ConvInteger": every_opset(convert_conv_integer, first=10),
    "QLinearMatMul": every_opset(convert_qlinear_matmul, first=10),
    "QLinearConv": every_opset(convert_qlinear_conv, first=10),
}
