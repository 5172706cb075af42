"""Scales and zero points of the quantisation operators, shaped to broadcast against the tensor
they quantise, and quantised tensors shifted by their zero points into int32.

ONNX gives a scale (and its zero point) per tensor (a scalar, or any one-element tensor, as
onnxruntime and ONNX's reference read it), per axis (a vector along `axis`) or per block (the
tensor's shape with `axis` divided into blocks of `block_size`). Each becomes an operand that
broadcasts with NumPy's rules: a scalar, a [C, 1, ..., 1] tensor, or the blocks repeated along
`axis` (a `take` of the block of each index), folded when the scale is known at import.
"""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const, folded
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType

INTEGER_INPUTS = ("int8", "uint8", "int16", "uint16", "int32")


def _reshaped(node: OnnxNode, value: Value, shape: tuple[int, ...]) -> Value:
    """`value` reshaped (folded when constant; built once per import and shape)."""
    if value.type.shape == shape:
        return value

    def build() -> Expr:
        if value.is_constant:
            return folded(value.expr, value.data.reshape(shape))
        return call("reshape", value.expr, newshape=shape)

    expr = node.derived.get(value.expr, ("reshape", shape), build)
    return Value(expr, TensorType(shape, value.type.dtype))


def _blocks_expanded(
    node: OnnxNode, value: Value, shape: tuple[int, ...], axis: int, block_size: int, what: str
) -> Value:
    """A blocked scale or zero point repeated along `axis` to `shape` (block i // block_size)."""
    blocks = value.type.shape
    others_match = len(blocks) == len(shape) and all(
        b == s for d, (b, s) in enumerate(zip(blocks, shape, strict=True)) if d != axis
    )
    if not others_match or blocks[axis] * block_size < shape[axis]:
        raise node.error(
            f"{what} of shape {list(blocks)} does not block input of shape {list(shape)} along "
            f"axis {axis} in blocks of {block_size}",
            hint="a blocked scale has the input's shape with the axis divided into "
            "ceil(extent / block_size) blocks",
        )
    index = np.arange(shape[axis], dtype=np.int64) // block_size

    def build() -> Expr:
        if value.is_constant:
            return folded(value.expr, np.take(value.data, index, axis=axis))
        return call("take", value.expr, const(index), axis=axis)

    expr = node.derived.get(value.expr, ("blocks", axis, block_size, shape[axis]), build)
    return Value(expr, TensorType(shape, value.type.dtype))


def broadcast_param(
    node: OnnxNode,
    index: int,
    shape: tuple[int, ...],
    axis: int,
    block_size: int = 0,
    what: str = "scale",
) -> Value:
    """Input `index` (a scale or zero point) as an operand broadcasting to `shape`: a scalar per
    tensor, [C, 1, ...] per `axis`, the blocks repeated per block of `block_size`."""
    value = node.input(index)
    param = value.type.shape
    if math.prod(param) == 1:
        return _reshaped(node, value, ())
    if block_size > 0:
        return _blocks_expanded(node, value, shape, node.axis(axis, len(shape)), block_size, what)
    if len(param) != 1:
        raise node.error(
            f"{what} of shape {list(param)}: a scale is a scalar, a vector along the axis, or "
            "(from opset 21, with block_size) blocked"
        )
    axis = node.axis(axis, len(shape))
    if param[0] != shape[axis]:
        raise node.error(
            f"{what} has {param[0]} values but axis {axis} of the input has extent {shape[axis]}"
        )
    return _reshaped(node, value, (param[0],) + (1,) * (len(shape) - axis - 1))


def shifted_int32(node: OnnxNode, value: Value, zero_point: Value | None) -> Value:
    """int32(value) - int32(zero_point): a quantised tensor as the integers it stands for
    (exact: the operands have at most 16 bits); folded when both are constant."""
    if value.type.dtype not in INTEGER_INPUTS:
        raise node.error(
            f"input of element type {value.type.dtype}: Tessel quantises to "
            f"{', '.join(INTEGER_INPUTS)}"
        )
    zero_is_known = zero_point is None or zero_point.is_constant
    if zero_is_known and value.is_constant:
        # A quantised weight: shifted once per import, however many nodes read it.
        def build() -> Expr:
            data = value.data.astype(np.int32)
            if zero_point is not None:
                data = data - zero_point.data.astype(np.int32)
            return folded(value.expr, data)

        zero_expr = None if zero_point is None else zero_point.expr
        expr = node.derived.get(value.expr, ("int32_minus", zero_expr), build)
        return Value(expr, TensorType(value.type.shape, "int32"))
    expr = _as_int32(value.expr, value.type.dtype)
    if zero_point is not None and not (zero_point.is_constant and not zero_point.data.any()):
        expr = call("subtract", expr, _as_int32(zero_point.expr, zero_point.type.dtype))
    return Value(expr, TensorType(value.type.shape, "int32"))


def _as_int32(expr: Expr, dtype: str) -> Expr:
    return expr if dtype == "int32" else call("cast", expr, dtype="int32")


def float_operand(value: Value, dtype: str) -> Expr:
    """`value` in the float `dtype` (folded when constant)."""
    if value.type.dtype == dtype:
        return value.expr
    if value.is_constant:
        return const(value.data.astype(dtype))
    return call("cast", value.expr, dtype=dtype)
