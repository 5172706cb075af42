"""Normalisations by statistics over axes, composed from graph reductions and elementwise ops:
RMSNormalization, InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
LpNormalization, LRN, and BatchNormalization in training mode.

They compute in the input's floating-point dtype, but for the first stage (the normalisation)
of RMSNormalization and GroupNormalization-21, which computes in stash_type (float32 by default)
and is cast back before the scale and bias, as their function bodies do.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from tessel.frontend.onnx.converters.reduce import Result, apply, data_of, reshape, scalar
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.values import Value


def float_dtype(node: OnnxNode) -> str:
    """The data's dtype, which must be floating-point."""
    dtype = node.input(0).type.dtype
    if not dtype.startswith(("float", "bfloat")):
        raise node.error(f"is defined for floating-point data only, got {dtype}")
    return dtype


def stash_dtype(node: OnnxNode) -> str:
    """The floating-point dtype the first stage (the normalisation) computes in: stash_type,
    an ONNX element type (float32 by default)."""
    stash = node.attr("stash_type", onnx.TensorProto.FLOAT)
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(stash))
    except (KeyError, TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind != "f":
        raise node.error(f"stash_type={stash} is not a floating-point element type")
    return str(dtype)


def in_dtype(value: Result, dtype: str, wanted: str) -> Result:
    """`value` (of `dtype`) cast to `wanted`, when they differ."""
    return value if dtype == wanted else apply("cast", value, dtype=wanted)


def shaped_like_input(node: OnnxNode, result: Result) -> Result | Value:
    """`result`, typed as the data when ONNX's inference gives no output shape (a function op
    whose body it does not expand: GroupNormalization, MeanVarianceNormalization)."""
    if node.output_types[0] is not None or isinstance(result, np.ndarray):
        return result
    return Value(result, node.input(0).type)


def standardize(x: Result, axes: tuple[int, ...], epsilon: float, dtype: str) -> list[Result]:
    """[(x - mean) / sqrt(variance + epsilon), mean, 1 / sqrt(variance + epsilon)] over `axes`
    (keepdims statistics; the variance of the centred data, two passes, for accuracy)."""
    mean = apply("mean", x, axis=axes, keepdims=True)
    centered = apply("subtract", x, mean)
    variance = apply("mean", apply("multiply", centered, centered), axis=axes, keepdims=True)
    inv_std = apply("rsqrt", apply("add", variance, scalar(epsilon, dtype)))
    return [apply("multiply", centered, inv_std), mean, inv_std]


def per_channel(value: Result, channels: int, ndim: int) -> Result:
    """A [C] parameter shaped [C, 1, ..., 1] to broadcast over axis 1 of rank-`ndim` data."""
    return reshape(value, (channels,) + (1,) * (ndim - 2))


def convert_rms_norm(node: OnnxNode) -> Result:
    """RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale over the axes from `axis` on."""
    dtype, stash = float_dtype(node), stash_dtype(node)
    shape = node.shape(0)
    axes = tuple(range(node.axis(node.attr("axis", -1), len(shape)), len(shape)))
    x = in_dtype(data_of(node), dtype, stash)
    mean_square = apply("mean", apply("multiply", x, x), axis=axes, keepdims=True)
    inv_rms = apply("rsqrt", apply("add", mean_square, scalar(node.attr("epsilon", 1e-5), stash)))
    normal = in_dtype(apply("multiply", x, inv_rms), stash, dtype)
    return apply("multiply", normal, data_of(node, 1))


def convert_instance_norm(node: OnnxNode) -> Result:
    """InstanceNormalization: standardise each [n, c] over the spatial axes, then scale and
    shift per channel."""
    dtype = float_dtype(node)
    ndim = len(node.shape(0))
    if ndim < 3:
        raise node.error(f"the data must be [N, C, D1, ...], got {list(node.shape(0))}")
    normal = standardize(data_of(node), tuple(range(2, ndim)), node.attr("epsilon", 1e-5), dtype)
    channels = node.shape(0)[1]
    scaled = apply("multiply", normal[0], per_channel(data_of(node, 1), channels, ndim))
    return apply("add", scaled, per_channel(data_of(node, 2), channels, ndim))


def convert_group_norm(node: OnnxNode) -> Result | Value:
    """GroupNormalization: standardise each instance's group of C / num_groups channels; scale
    and bias are per group at opset 18, per channel from 21."""
    dtype = float_dtype(node)
    stash = stash_dtype(node) if node.opset >= 21 else dtype
    shape = node.shape(0)
    groups = int(node.attr("num_groups"))
    if len(shape) < 2 or groups <= 0 or shape[1] % groups:
        raise node.error(f"num_groups={groups} does not divide the channels of {list(shape)}")
    grouped = reshape(data_of(node), (shape[0], groups, math.prod(shape[1:]) // groups))
    normal = standardize(in_dtype(grouped, dtype, stash), (2,), node.attr("epsilon", 1e-5), stash)
    normal = in_dtype(normal[0], stash, dtype)
    scale, bias = data_of(node, 1), data_of(node, 2)
    if node.opset < 21:  # [num_groups] parameters, over the grouped view
        normal = apply(
            "add",
            apply("multiply", normal, per_channel(scale, groups, 3)),
            per_channel(bias, groups, 3),
        )
        return shaped_like_input(node, reshape(normal, shape))
    normal = reshape(normal, shape)
    scaled = apply("multiply", normal, per_channel(scale, shape[1], len(shape)))
    return shaped_like_input(node, apply("add", scaled, per_channel(bias, shape[1], len(shape))))


def convert_mvn(node: OnnxNode) -> Result | Value:
    """MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9) over `axes`, as ONNX's
    function body (its epsilon is added to the standard deviation)."""
    dtype = float_dtype(node)
    ndim = len(node.shape(0))
    axes = tuple(sorted({node.axis(int(a), ndim) for a in node.attr("axes", [0, 2, 3])}))
    x = data_of(node)
    mean = apply("mean", x, axis=axes, keepdims=True)
    centered = apply("subtract", x, mean)
    variance = apply("mean", apply("multiply", centered, centered), axis=axes, keepdims=True)
    std = apply("add", apply("sqrt", variance), scalar(1e-9, dtype))
    return shaped_like_input(node, apply("divide", centered, std))


def convert_lp_norm(node: OnnxNode) -> Result:
    """LpNormalization: x / ||x||_p along `axis` (p 1 or 2), 0 where the norm is 0."""
    dtype = float_dtype(node)
    p = node.attr("p", 2)
    if p not in (1, 2):
        raise node.error(f"p={p} is not supported: the norm is L1 or L2")
    axis = node.axis(node.attr("axis", -1), len(node.shape(0)))
    x = data_of(node)
    if p == 1:
        norm = apply("sum", apply("abs", x), axis=(axis,), keepdims=True)
    else:
        norm = apply("sqrt", apply("sum", apply("multiply", x, x), axis=(axis,), keepdims=True))
    zero = scalar(0, dtype)
    is_zero = apply("equal", norm, zero)
    divisor = apply("where", is_zero, scalar(1, dtype), norm)  # no 0 / 0 computed
    return apply("where", is_zero, zero, apply("divide", x, divisor))


def convert_lrn(node: OnnxNode) -> Result:
    """LRN: x / (bias + alpha / size * square_sum) ^ beta, square_sum adding the squares of the
    channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2): `size` shifted slices of the
    squares padded with zeros along the channels."""
    dtype = float_dtype(node)
    shape = node.shape(0)
    size = int(node.attr("size"))
    if len(shape) < 3 or size < 1:
        raise node.error(f"needs data [N, C, D1, ...] and size >= 1, got {list(shape)}, {size}")
    before, after = (size - 1) // 2, math.ceil((size - 1) / 2)
    x = data_of(node)
    squares = apply("multiply", x, x)
    widths = tuple((before, after) if d == 1 else (0, 0) for d in range(len(shape)))
    padded = apply("nn.pad", squares, scalar(0, dtype), pad_width=widths)
    channels = shape[1]
    square_sum = None
    for offset in range(size):
        window = apply(
            "strided_slice",
            padded,
            begin=(offset,),
            end=(offset + channels,),
            strides=(1,),
            axes=(1,),
        )
        square_sum = window if square_sum is None else apply("add", square_sum, window)
    alpha, beta, bias = (
        float(node.attr(n, d)) for n, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0))
    )
    base = apply(
        "add", scalar(bias, dtype), apply("multiply", scalar(alpha / size, dtype), square_sum)
    )
    return apply("divide", x, apply("power", base, scalar(beta, dtype)))


def convert_batch_norm_training(node: OnnxNode) -> list[Result]:
    """BatchNormalization with training_mode=1: normalised by the batch's statistics over every
    axis but 1, and the running mean and variance updated with `momentum`."""
    dtype = float_dtype(node)
    shape = node.shape(0)
    axes = tuple(d for d in range(len(shape)) if d != 1)
    normal, mean, _ = standardize(data_of(node), axes, node.attr("epsilon", 1e-5), dtype)
    scale, bias = (per_channel(data_of(node, i), shape[1], len(shape)) for i in (1, 2))
    out = apply("add", apply("multiply", normal, scale), bias)
    momentum = float(node.attr("momentum", 0.9))
    batch_mean = reshape(mean, (shape[1],))
    centered = apply("subtract", data_of(node), mean)
    batch_var = apply("mean", apply("multiply", centered, centered), axis=axes, keepdims=False)

    def running(old: Result, batch: Result) -> Result:
        kept = apply("multiply", old, scalar(momentum, dtype))
        return apply("add", kept, apply("multiply", batch, scalar(1 - momentum, dtype)))

    return [out, running(data_of(node, 3), batch_mean), running(data_of(node, 4), batch_var)]


TABLE: dict[str, tuple[Entry, ...]] = {
    "RMSNormalization": every_opset(convert_rms_norm, first=23),
    "InstanceNormalization": every_opset(convert_instance_norm),
    "GroupNormalization": every_opset(convert_group_norm, first=18),
    "MeanVarianceNormalization": every_opset(convert_mvn),
    "LpNormalization": every_opset(convert_lp_norm),
    "LRN": every_opset(convert_lrn),
}
