"""Normalisations: BatchNormalization, LayerNormalization, Softmax and LogSoftmax."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const, item
from tessel.graph.expr import Expr


def convert_batch_norm(node: OnnxNode) -> Expr:
    """BatchNormalization at inference: nn.batch_norm(axis=1), field 0 of its tuple."""
    if node.attr("training_mode", 0):
        raise node.error("training_mode=1 is not supported; Tessel imports for inference")
    if any(node.output_used(i) for i in (1, 2)):
        raise node.error("the running mean/variance outputs exist only in training mode")
    norm = call(
        "nn.batch_norm",
        *(node.expr(i) for i in range(5)),
        axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)),
    )
    return item(norm, 0)


def convert_layer_norm(node: OnnxNode) -> list[Expr | None]:
    """LayerNormalization (opset 17+). Over the last axis: nn.layer_norm; over several axes, or
    when the Mean / InvStdDev outputs are used: the mean/variance decomposition."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    axis = node.axis(node.attr("axis", -1), len(shape))
    epsilon = float(node.attr("epsilon", 1e-5))
    bias = node.expr(2) if node.has_input(2) else const(np.zeros(node.shape(1), dtype))
    extra_outputs = node.output_used(1) or node.output_used(2)
    if axis == len(shape) - 1 and not extra_outputs:
        out = call("nn.layer_norm", node.expr(0), node.expr(1), bias, axis=-1, epsilon=epsilon)
        return [out, None, None]
    axes = tuple(range(axis, len(shape)))
    mean = call("mean", node.expr(0), axis=axes, keepdims=True)
    centered = call("subtract", node.expr(0), mean)
    variance = call("mean", call("multiply", centered, centered), axis=axes, keepdims=True)
    inv_std = call("rsqrt", call("add", variance, const(epsilon, dtype)))
    scaled = call("multiply", call("multiply", centered, inv_std), node.expr(1))
    return [call("add", scaled, bias), _stashed(node, 1, mean), _stashed(node, 2, inv_std)]


def _stashed(node: OnnxNode, index: int, value: Expr) -> Expr | None:
    """Output `index` (Mean or InvStdDev) in its stash_type dtype, or None when omitted. The
    statistics are computed in the input's dtype, which is float32's precision for float32."""
    ty = node.output_types[index] if index < len(node.output_types) else None
    if ty is None:
        return None
    if ty.dtype == node.input(0).type.dtype:
        return value
    return call("cast", value, dtype=ty.dtype)


def _softmax(node: OnnxNode, relay_name: str) -> Expr:
    shape = node.shape(0)
    default = 1 if node.opset < 13 else -1
    axis = node.axis(node.attr("axis", default), max(len(shape), 1))
    if node.opset >= 13 or axis == len(shape) - 1:
        return call(relay_name, node.expr(0), axis=-1 if axis >= len(shape) - 1 else axis)
    # Before opset 13 the input is seen as a matrix [prod(shape[:axis]), prod(shape[axis:])]
    # and normalised along its rows.
    rows = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    flat = call("reshape", node.expr(0), newshape=rows)
    return call("reshape", call(relay_name, flat, axis=1), newshape=shape)


def convert_softmax(node: OnnxNode) -> Expr:
    """Softmax: nn.softmax on `axis` (opset 13+); opsets 11-12 flatten at `axis` first."""
    return _softmax(node, "nn.softmax")


def convert_log_softmax(node: OnnxNode) -> Expr:
    """LogSoftmax: nn.log_softmax, with Softmax's opset rules."""
    return _softmax(node, "nn.log_softmax")


TABLE: dict[str, tuple[Entry, ...]] = {
    # normalisation
    "BatchNormalization": every_opset(convert_batch_norm),
    "LayerNormalization": every_opset(convert_layer_norm, first=17),
    "Softmax": (
        (FIRST_OPSET, 12, convert_softmax),  # flattens at `axis` (default 1)
        (13, LAST_OPSET, convert_softmax),  # one axis (default -1)
    ),
    "LogSoftmax": (
        (FIRST_OPSET, 12, convert_log_softmax),
        (13, LAST_OPSET, convert_log_softmax),
    ),
}
