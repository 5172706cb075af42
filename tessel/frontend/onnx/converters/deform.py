"""DeformConv (2-D) composed of existing operators, as ONNX's reference defines it: each
kernel tap samples the input bilinearly (zero outside) at its regular position plus the offset,
which image.grid_sample does with align_corners (positions normalised over [0, extent - 1]);
the samples, weighted by the mask, are the columns of a convolution done as one batched product
(a batch per group)."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType


def _grid(node: OnnxNode, groups: int, out: tuple[int, int]) -> Expr:
    """The sampling grid (N * offset_group, K, OH * OW, (x, y)) normalised for align_corners."""
    (n, _, height, width), kernel = node.shape(0), tuple(node.shape(1)[2:])
    strides = node.attr("strides", [1, 1])
    dilations = node.attr("dilations", [1, 1])
    pads = node.attr("pads", [0, 0, 0, 0])
    taps = math.prod(kernel)
    ky, kx = np.meshgrid(np.arange(kernel[0]), np.arange(kernel[1]), indexing="ij")
    oy, ox = np.meshgrid(np.arange(out[0]), np.arange(out[1]), indexing="ij")
    # (K, OH, OW): the regular positions of every tap of every output, as (x, y).
    base_y = ky.reshape(-1, 1, 1) * dilations[0] + oy * strides[0] - pads[0]
    base_x = kx.reshape(-1, 1, 1) * dilations[1] + ox * strides[1] - pads[1]
    scale = np.array([2 / (width - 1), 2 / (height - 1)])
    bias = np.stack([base_x, base_y], axis=-1) * scale - 1
    dtype = node.input(0).type.dtype
    offsets = call("reshape", node.expr(2), newshape=(n * groups, taps, 2, *out))
    offsets = call("transpose", offsets, axes=(0, 1, 3, 4, 2))  # (.., OH, OW, (dy, dx))
    swapped = call("take", offsets, const(np.array([1, 0], np.int64)), axis=4)  # (dx, dy)
    grid = call("add", call("multiply", swapped, const(scale, dtype)), const(bias, dtype))
    return call("reshape", grid, newshape=(n * groups, taps, out[0] * out[1], 2))


def _convolve(node: OnnxNode, sampled: Expr, groups: int, taps: int, columns: int) -> Expr:
    """The convolution of the sampled columns (N, C, K, OH * OW) with the weight, per group:
    (groups, O / groups, C / groups * K) @ (groups, C / groups * K, N * OH * OW)."""
    n, channels = node.shape(0)[:2]
    filters, depth = node.shape(1)[0], channels // groups * taps
    cols = call("reshape", sampled, newshape=(n, groups, depth, columns))
    cols = call(
        "reshape", call("transpose", cols, axes=(1, 2, 0, 3)), newshape=(groups, depth, n * columns)
    )
    kernel = call("reshape", node.expr(1), newshape=(groups, filters // groups, depth))
    product = call("nn.batch_matmul", kernel, cols, transpose_b=False)
    product = call("reshape", product, newshape=(groups, filters // groups, n, columns))
    product = call("transpose", product, axes=(2, 0, 1, 3))
    return call("reshape", product, newshape=node.out_type().shape)


def convert_deform_conv(node: OnnxNode) -> Value:
    """DeformConv: grid-sampled columns (mask applied) times the reshaped weight [+ bias]."""
    shape, weight, out_type = node.shape(0), node.shape(1), node.out_type()
    if len(shape) != 4:
        raise node.error("Tessel imports 2-D DeformConv only")
    n, channels, height, width = shape
    groups, conv_groups = int(node.attr("offset_group", 1)), int(node.attr("group", 1))
    if height < 2 or width < 2 or channels % groups or channels % conv_groups:
        raise node.error(
            f"input {list(shape)} with offset_group {groups} is not supported "
            "(extents below 2 or channels not divisible)"
        )
    out = tuple(out_type.shape[2:])
    taps, columns = math.prod(weight[2:]), out[0] * out[1]
    wanted = {2: (n, groups * taps * 2, *out), 4: (n, groups * taps, *out)}
    for index, expected in wanted.items():
        if node.has_input(index) and node.shape(index) != expected:
            raise node.error(
                f"input {index} has shape {list(node.shape(index))}, not {list(expected)}"
            )
    data = call("reshape", node.expr(0), newshape=(n * groups, channels // groups, height, width))
    sampled = call(
        "image.grid_sample",
        data,
        _grid(node, groups, out),
        mode="linear",
        padding_mode="zeros",
        align_corners=True,
    )  # (N*G, C/G, K, OH*OW)
    if node.has_input(4):
        mask = call("reshape", node.expr(4), newshape=(n * groups, 1, taps, columns))
        sampled = call("multiply", sampled, mask)
    result = _convolve(node, sampled, conv_groups, taps, columns)
    if node.has_input(3):
        result = call("nn.bias_add", result, node.expr(3), axis=1)
    return Value(result, TensorType(out_type.shape, out_type.dtype))
