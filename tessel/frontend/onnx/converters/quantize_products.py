"""The integer products: MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.

Each operand is shifted by its zero point into int32 (exact), multiplied by MatMul's or Conv's
own conversion on those int32 tensors (nn.dense / nn.batch_matmul / nn.conv2d accumulating in
int32), so the padding of a convolution stands for the real value 0, as ONNX says. QLinear*
then requantise the int32 accumulator (plus QLinearConv's int32 bias) with
qnn.requantize: float32(acc) * (input scale * weight scale / output scale), rounded half to
even, plus the output zero point, saturated, which is onnxruntime's arithmetic.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from tessel.frontend.onnx.converters.conv_pool import convert_conv
from tessel.frontend.onnx.converters.linear import convert_matmul
from tessel.frontend.onnx.converters.quantize_params import (
    broadcast_param,
    float_operand,
    shifted_int32,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.op.quantize import QUANTIZED_DTYPES

Result = Expr | np.ndarray

_ROW, _COLUMN = "row", "column"


def _per_tensor(node: OnnxNode, index: int, what: str) -> Value:
    """Input `index`, a per-tensor scale or zero point, as a scalar."""
    if math.prod(node.shape(index)) != 1:
        raise node.error(
            f"{what} of shape {list(node.shape(index))}: it must be per tensor (one value)"
        )
    return broadcast_param(node, index, (), 0, what=what)


def _matrix_param(node: OnnxNode, index: int, shape: tuple[int, ...], per: str, what: str) -> Value:
    """A scale or zero point of a matrix operand: per tensor, per row of [..., M, K] (M values
    or [..., M, 1]) or per column of [..., K, N] (N values or [..., 1, N])."""
    value = node.input(index)
    param = value.type.shape
    if math.prod(param) == 1:
        return broadcast_param(node, index, shape, 0, what=what)
    if len(param) == 1 and len(shape) >= 2:
        axis = len(shape) - 2 if per == _ROW else len(shape) - 1
        return broadcast_param(node, index, shape, axis, what=what)
    wanted = shape[:-1] + (1,) if per == _ROW else shape[:-2] + (1, shape[-1])
    if len(shape) < 2 or param[-2:] != wanted[-2:] or not _broadcasts_to(param, shape):
        raise node.error(
            f"{what} of shape {list(param)} is not per tensor or per {per} of an "
            f"operand of shape {list(shape)}"
        )
    return value


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True if `shape` broadcasts to `target` (NumPy's rules) without changing it."""
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _matmul_operands(
    node: OnnxNode, a: int, a_zero: int, b: int, b_zero: int
) -> tuple[Value, Value]:
    """A and B shifted by their zero points (per tensor, per row of A, per column of B)."""
    a_shape, b_shape = node.shape(a), node.shape(b)
    a_zero_point = (
        _matrix_param(node, a_zero, a_shape, _ROW, "a_zero_point")
        if node.has_input(a_zero)
        else None
    )
    b_zero_point = (
        _matrix_param(node, b_zero, b_shape, _COLUMN, "b_zero_point")
        if node.has_input(b_zero)
        else None
    )
    return (
        shifted_int32(node, node.input(a), a_zero_point),
        shifted_int32(node, node.input(b), b_zero_point),
    )


def _int32_matmul(node: OnnxNode, a: Value, b: Value) -> Result:
    """MatMul's conversion (NumPy's broadcasting, dense or batch_matmul) on int32 operands."""
    return convert_matmul(dataclasses.replace(node, inputs=(a, b)))


def _int32_conv(node: OnnxNode, x: Value, w: Value) -> Expr:
    """Conv's conversion (strides, pads, auto_pad, dilations, groups) on int32 operands."""
    return convert_conv(dataclasses.replace(node, inputs=(x, w)))


def _as_expr(result: Result) -> Expr:
    return const(result) if isinstance(result, np.ndarray) else result


def convert_matmul_integer(node: OnnxNode) -> Result:
    """MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) accumulated in int32."""
    a, b = _matmul_operands(node, 0, 2, 1, 3)
    return _int32_matmul(node, a, b)


def _conv_operands(node: OnnxNode, x: int, x_zero: int, w: int, w_zero: int) -> tuple[Value, Value]:
    """X shifted by its (per tensor) zero point, W by its per tensor or per output channel one."""
    x_zero_point = _per_tensor(node, x_zero, "x_zero_point") if node.has_input(x_zero) else None
    w_zero_point = (
        broadcast_param(node, w_zero, node.shape(w), 0, what="w_zero_point")
        if node.has_input(w_zero)
        else None
    )
    return (
        shifted_int32(node, node.input(x), x_zero_point),
        shifted_int32(node, node.input(w), w_zero_point),
    )


def convert_conv_integer(node: OnnxNode) -> Result:
    """ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point) accumulated in int32."""
    x, w = _conv_operands(node, 0, 2, 1, 3)
    return _int32_conv(node, x, w)


def _multiplier(node: OnnxNode, scales: list[Value]) -> Expr:
    """scales[0] * scales[1] / scales[2] in float32 (float16 scales widened), folded when
    constant: the factor from the accumulator's scale to the output's."""
    if all(s.is_constant for s in scales):
        a, b, y = (s.data.astype(np.float32) for s in scales)
        return const(a * b / y)
    a, b, y = (float_operand(s, "float32") for s in scales)
    return call("divide", call("multiply", a, b), y)


def _requantize(node: OnnxNode, acc: Expr, multiplier: Expr, zero: int) -> Expr:
    """qnn.requantize of the int32 accumulator into the output zero point's dtype."""
    out = node.out_type()
    if out.dtype not in QUANTIZED_DTYPES:
        raise node.error(
            f"output of element type {out.dtype}: Tessel requantises to "
            f"{', '.join(QUANTIZED_DTYPES)}"
        )
    if node.has_input(zero):
        zero_point = _per_tensor(node, zero, "y_zero_point").expr
    else:
        zero_point = const(np.zeros((), out.dtype))
    return call("qnn.requantize", acc, multiplier, zero_point, out_dtype=out.dtype)


def convert_qlinear_matmul(node: OnnxNode) -> Expr:
    """QLinearMatMul: the int32 product of the shifted operands, requantised with
    a_scale * b_scale / y_scale (per tensor, per row of a, per column of b)."""
    a, b = _matmul_operands(node, 0, 2, 3, 5)
    acc = _as_expr(_int32_matmul(node, a, b))
    scales = [
        _matrix_param(node, 1, node.shape(0), _ROW, "a_scale"),
        _matrix_param(node, 4, node.shape(3), _COLUMN, "b_scale"),
        _per_tensor(node, 6, "y_scale"),
    ]
    return _requantize(node, acc, _multiplier(node, scales), 7)


def convert_qlinear_conv(node: OnnxNode) -> Expr:
    """QLinearConv: the int32 convolution of the shifted operands plus the int32 bias,
    requantised with x_scale * w_scale / y_scale (w_scale per tensor or per output channel)."""
    x, w = _conv_operands(node, 0, 2, 3, 5)
    acc = _int32_conv(node, x, w)
    if node.has_input(8):
        acc = call("nn.bias_add", acc, node.expr(8), axis=1)
    out_shape = node.out_type().shape
    scales = [
        _per_tensor(node, 1, "x_scale"),
        broadcast_param(node, 4, out_shape, 1, what="w_scale"),
        _per_tensor(node, 6, "y_scale"),
    ]
    return _requantize(node, acc, _multiplier(node, scales), 7)
