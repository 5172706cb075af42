"""Normalisations: BatchNormalization, LayerNormalization, Softmax, LogSoftmax and Hardmax; the
others (RMSNormalization, GroupNormalization, LRN, ...) are in normalization_stats."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.converters.normalization_stats import (
    convert_batch_norm_training,
    in_dtype,
    standardize,
    stash_dtype,
)
from tessel.frontend.onnx.converters.reduce import Result, apply, data_of, reshape, scalar
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const, item
from tessel.graph.expr import Expr


def convert_batch_norm(node: OnnxNode) -> Expr | list[Result]:
    """BatchNormalization at inference: nn.batch_norm(axis=1), field 0 of its tuple; with
    training_mode=1 (opset 14+), normalised by the batch's statistics."""
    if not node.attr("spatial", 1):  # opsets 7-8: statistics per element, not per channel
        raise node.error("spatial=0 (statistics per element) is not supported")
    if node.attr("training_mode", 0):
        return convert_batch_norm_training(node)
    if any(node.output_used(i) for i in range(1, 5)):
        raise node.error("the mean/variance outputs exist only in training mode")
    norm = call(
        "nn.batch_norm",
        *(node.expr(i) for i in range(5)),
        axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)),
    )
    return item(norm, 0)


def convert_layer_norm(node: OnnxNode) -> list[Result | None]:
    """LayerNormalization (opset 17+). Over the last axis: nn.layer_norm; over several axes,
    when the Mean / InvStdDev outputs are used, or when stash_type (the dtype of the first
    stage, the normalisation) is not the data's: the mean/variance decomposition."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    axis = node.axis(node.attr("axis", -1), len(shape))
    epsilon = float(node.attr("epsilon", 1e-5))
    bias = node.expr(2) if node.has_input(2) else const(np.zeros(node.shape(1), dtype))
    extra_outputs = node.output_used(1) or node.output_used(2)
    stash = stash_dtype(node)
    if axis == len(shape) - 1 and not extra_outputs and stash == dtype:
        out = call("nn.layer_norm", node.expr(0), node.expr(1), bias, axis=-1, epsilon=epsilon)
        return [out, None, None]
    x = in_dtype(node.expr(0), dtype, stash)
    normal, mean, inv_std = standardize(x, tuple(range(axis, len(shape))), epsilon, stash)
    scaled = call("multiply", in_dtype(normal, stash, dtype), node.expr(1))
    return [call("add", scaled, bias), _stashed(node, 1, mean), _stashed(node, 2, inv_std)]


def _stashed(node: OnnxNode, index: int, value: Result) -> Result | None:
    """Output `index` (Mean or InvStdDev), computed in stash_type, which is its dtype; None when
    omitted."""
    ty = node.output_types[index] if index < len(node.output_types) else None
    if ty is None:
        return None
    return in_dtype(value, stash_dtype(node), ty.dtype)


def _softmax(node: OnnxNode, relay_name: str) -> Expr:
    shape = node.shape(0)
    default = 1 if node.opset < 13 else -1
    axis = node.axis(node.attr("axis", default), max(len(shape), 1))
    if node.opset >= 13 or axis == len(shape) - 1:
        return call(relay_name, node.expr(0), axis=-1 if axis >= len(shape) - 1 else axis)
    # Before opset 13 the input is seen as a matrix [prod(shape[:axis]), prod(shape[axis:])]
    # and normalised along its rows.
    rows = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    flat = call("reshape", node.expr(0), newshape=rows, allowzero=True)
    return call("reshape", call(relay_name, flat, axis=1), newshape=shape, allowzero=True)


def convert_softmax(node: OnnxNode) -> Expr:
    """Softmax: nn.softmax on `axis` (opset 13+); opsets 11-12 flatten at `axis` first."""
    return _softmax(node, "nn.softmax")


def convert_log_softmax(node: OnnxNode) -> Expr:
    """LogSoftmax: nn.log_softmax, with Softmax's opset rules."""
    return _softmax(node, "nn.log_softmax")


def convert_hardmax(node: OnnxNode) -> Result:
    """Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (the one-hot of argmax); before
    opset 13 along the rows of the input seen as a matrix split at `axis`, as Softmax."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    axis = node.axis(node.attr("axis", 1 if node.opset < 13 else -1), max(len(shape), 1))
    x = data_of(node)
    if not shape or 0 in shape:  # nothing to pick from: the data itself, as onnx's reference
        return x
    if node.opset < 13:
        rows = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        hot = _one_hot_of_max(reshape(x, rows), 1, rows[1], dtype)
        return reshape(hot, shape)
    return _one_hot_of_max(x, axis, shape[axis], dtype)


def _one_hot_of_max(x: Result, axis: int, depth: int, dtype: str) -> Result:
    """The one-hot along `axis` of the first maximum's index."""
    index = apply("argmax", x, axis=(axis,), keepdims=False, select_last_index=False)
    return apply("one_hot", index, scalar(1, dtype), scalar(0, dtype), depth=depth, axis=axis)


TABLE: dict[str, tuple[Entry, ...]] = {
    # normalisation
    "BatchNormalization": every_opset(convert_batch_norm),
    "LayerNormalization": every_opset(convert_layer_norm, first=17),
    "Softmax": (
        (FIRST_OPSET, 12, convert_softmax),  # flattens at `axis` (default 1)
        (13, LAST_OPSET, convert_softmax),  # one axis (default -1)
    ),
    "Hardmax": (
        (FIRST_OPSET, 12, convert_hardmax),  # flattens at `axis` (default 1)
        (13, LAST_OPSET, convert_hardmax),  # one axis (default -1)
    ),
    "LogSoftmax": (
        (FIRST_OPSET, 12, convert_log_softmax),
        (13, LAST_OPSET, convert_log_softmax),
    ),
}
