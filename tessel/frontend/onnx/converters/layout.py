"""Image layout operators composed of existing ones: DepthToSpace and SpaceToDepth (reshape,
transpose, reshape), CenterCropPad (strided_slice, nn.pad) and Col2Im (a grouped transposed
convolution whose one-hot weights put each block column at its kernel position)."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType


def _blocks(node: OnnxNode) -> tuple[int, int, int, int, int]:
    """(N, C, H, W, blocksize) of a rank-4 input."""
    shape = node.shape(0)
    if len(shape) != 4:
        raise node.error(f"input of rank {len(shape)}: DepthToSpace/SpaceToDepth take rank 4")
    block = int(node.attr("blocksize", 0))
    if block < 1:
        raise node.error(f"blocksize {block} must be positive")
    return (*shape, block)


def _mode(node: OnnxNode) -> str:
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.error(f"mode {mode!r} is not 'DCR' or 'CRD'")
    return mode


def convert_depth_to_space(node: OnnxNode) -> Expr:
    """DepthToSpace: channel blocks moved to b x b spatial blocks (depth-column-row order, DCR,
    or column-row-depth, CRD)."""
    n, c, h, w, b = _blocks(node)
    if c % (b * b):
        raise node.error(f"{c} channels do not split into blocks of {b} x {b}")
    depth = c // (b * b)
    if _mode(node) == "DCR":
        split, order = (n, b, b, depth, h, w), (0, 3, 4, 1, 5, 2)
    else:
        split, order = (n, depth, b, b, h, w), (0, 1, 4, 2, 5, 3)
    moved = call("transpose", call("reshape", node.expr(0), newshape=split), axes=order)
    return call("reshape", moved, newshape=(n, depth, h * b, w * b))


def convert_space_to_depth(node: OnnxNode) -> Expr:
    """SpaceToDepth: b x b spatial blocks moved to channels (DCR or, from opset 28, CRD)."""
    n, c, h, w, b = _blocks(node)
    if h % b or w % b:
        raise node.error(f"spatial extents {h} x {w} do not split into blocks of {b}")
    order = (0, 3, 5, 1, 2, 4) if _mode(node) == "DCR" else (0, 1, 3, 5, 2, 4)
    split = call("reshape", node.expr(0), newshape=(n, c, h // b, b, w // b, b))
    moved = call("transpose", split, axes=order)
    return call("reshape", moved, newshape=(n, c * b * b, h // b, w // b))


def convert_center_crop_pad(node: OnnxNode) -> Value:
    """CenterCropPad: each named axis cropped or zero-padded to its target extent, centred (an
    odd difference puts the extra element at the end)."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    rank = len(shape)
    axes = [node.axis(int(a), rank) for a in node.attr("axes", range(rank))]
    target = [int(v) for v in node.static(1, "shape").reshape(-1)]
    if len(target) != len(axes):
        raise node.error(f"shape has {len(target)} extents for {len(axes)} axes")
    begin, end, widths, out = [0] * rank, list(shape), [(0, 0)] * rank, list(shape)
    for axis, size in zip(axes, target, strict=True):
        if size < 0:
            raise node.error(f"target extent {size} is negative")
        diff = abs(shape[axis] - size)
        if size < shape[axis]:
            begin[axis], end[axis] = diff // 2, diff // 2 + size
        else:
            widths[axis] = (diff // 2, diff - diff // 2)
        out[axis] = size
    data: Expr = node.expr(0)
    if begin != [0] * rank or end != list(shape):
        data = call("strided_slice", data, begin=begin, end=end)
    if any(w != (0, 0) for w in widths):
        data = call("nn.pad", data, const(np.zeros((), dtype)), pad_width=widths)
    return Value(data, TensorType(tuple(out), dtype))


def convert_col2im(node: OnnxNode) -> Value:
    """Col2Im: block columns (N, C * prod(block), L) summed into images (N, C, *image_shape),
    as a transposed convolution with groups C of one-hot weights (each block position's
    channel feeds only its own kernel position)."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    image = [int(v) for v in node.static(1, "image_shape")]
    block = [int(v) for v in node.static(2, "block_shape")]
    rank, kernel = len(image), math.prod(block)
    strides = list(node.attr("strides", [1] * rank))
    dilations = list(node.attr("dilations", [1] * rank))
    pads = list(node.attr("pads", [0] * 2 * rank))
    spans = [(k - 1) * d + 1 for k, d in zip(block, dilations, strict=True)]
    counts = [
        (image[i] + pads[i] + pads[rank + i] - spans[i]) // strides[i] + 1 for i in range(rank)
    ]
    if len(shape) != 3 or shape[1] % kernel or math.prod(counts) != shape[2] or min(counts) < 1:
        raise node.error(f"input {list(shape)} does not hold blocks {block} of image {image}")
    n, channels = shape[0], shape[1] // kernel
    columns = call("reshape", node.expr(0), newshape=(n, shape[1], *counts))
    one_hot = np.eye(kernel, dtype=dtype).reshape(kernel, 1, *block)
    one_hot = np.tile(one_hot, (channels, 1) + (1,) * rank)
    extra = [
        image[i] + pads[i] + pads[rank + i] - ((counts[i] - 1) * strides[i] + spans[i])
        for i in range(rank)
    ]
    out = call(
        f"nn.conv{rank}d_transpose",
        columns,
        const(one_hot),
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=channels,
        output_padding=extra,
    )
    return Value(out, TensorType((n, channels, *image), dtype))


# Joined into the family's TABLE (conv_pool.py or image.py), not a table of its own.
TABLE: dict[str, tuple[Entry, ...]] = {
    "DepthToSpace": every_opset(convert_depth_to_space),  # mode from 11
    "SpaceToDepth": every_opset(convert_space_to_depth),  # mode from 28
    "CenterCropPad": every_opset(convert_center_crop_pad, first=18),
    "Col2Im": every_opset(convert_col2im, first=18),
}
