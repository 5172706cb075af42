"""Convolution and pooling (NC + spatial layouts, 1-3 spatial dimensions): Conv, MaxPool,
AveragePool, GlobalAveragePool, GlobalMaxPool.

ONNX pads list every spatial dimension's start, then every end; Relay's `padding` uses the same
order ((top, left, bottom, right) in 2-D), so pads pass through once auto_pad is resolved.
"""

from __future__ import annotations

import math

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType


def _window_attrs(node: OnnxNode, kernel: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """(strides, dilations, pads) of a convolution or pooling node, with auto_pad resolved."""
    rank = len(kernel)
    strides = tuple(node.attr("strides", [1] * rank))
    dilations = tuple(node.attr("dilations", [1] * rank))
    pads = tuple(node.attr("pads", [0] * (2 * rank)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        pads = (0,) * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(node.shape(0)[2:], kernel, strides, dilations, auto_pad == "SAME_UPPER")
    elif auto_pad != "NOTSET":
        raise node.error(f"unknown auto_pad {auto_pad!r}")
    return strides, dilations, pads


def _same_pads(
    sizes: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    upper: bool,
) -> tuple[int, ...]:
    """Pads giving ceil(size / stride) outputs; an odd total puts the extra at the end (UPPER)
    or at the start (LOWER)."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
        total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if upper else large)
        ends.append(large if upper else small)
    return (*begins, *ends)


def _spatial_rank(node: OnnxNode) -> int:
    rank = len(node.shape(0)) - 2
    if rank not in (1, 2, 3):
        raise node.error(f"input of rank {rank + 2}: Tessel imports 1-D, 2-D and 3-D windows")
    return rank


def convert_conv(node: OnnxNode) -> Expr:
    """Conv (optionally grouped or depthwise, with bias): nn.conv{1,2,3}d [+ nn.bias_add]."""
    rank = _spatial_rank(node)
    weight_shape = node.shape(1)
    kernel = tuple(node.attr("kernel_shape", weight_shape[2:]))
    strides, dilations, pads = _window_attrs(node, kernel)
    out = call(
        f"nn.conv{rank}d",
        node.expr(0),
        node.expr(1),
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=int(node.attr("group", 1)),
        channels=weight_shape[0],
        kernel_size=kernel,
    )
    if node.has_input(2):
        out = call("nn.bias_add", out, node.expr(2), axis=1)
    return out


def _ceil_mode_pads(
    node: OnnxNode,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads: tuple[int, ...],
) -> tuple[tuple[int, ...], TensorType]:
    """End pads for which floor rounding gives ceil_mode's window count, and the output type.

    ceil_mode rounds the window count up, except that a last window starting in the end padding
    is dropped (onnxruntime and PyTorch; ONNX's shape inference in onnx 1.23 still counts it)."""
    rank = len(kernel)
    shape, ends, sizes = node.shape(0), list(pads[rank:]), []
    for dim in range(rank):
        padded = shape[2 + dim] + pads[dim] + ends[dim]
        span = (kernel[dim] - 1) * dilations[dim] + 1
        count = -(-(padded - span) // strides[dim]) + 1
        if (count - 1) * strides[dim] >= shape[2 + dim] + pads[dim]:
            count -= 1
        ends[dim] += max(0, (count - 1) * strides[dim] + span - padded)
        sizes.append(count)
    out = node.out_type()
    return (*pads[:rank], *ends), TensorType((*out.shape[:2], *sizes), out.dtype)


def convert_max_pool(node: OnnxNode) -> Value:
    """MaxPool: nn.max_pool{1,2,3}d. ceil_mode becomes extra end padding (padding never wins a
    max), so the window count is exactly onnxruntime's, which drops a last window starting in
    the padding."""
    if node.output_used(1):
        raise node.error("the Indices output is not supported")
    rank = _spatial_rank(node)
    kernel = tuple(node.attr("kernel_shape"))
    strides, dilations, pads = _window_attrs(node, kernel)
    out_type = node.out_type()
    if node.attr("ceil_mode", 0):
        pads, out_type = _ceil_mode_pads(node, kernel, strides, dilations, pads)
    pool = call(
        f"nn.max_pool{rank}d",
        node.expr(0),
        pool_size=kernel,
        strides=strides,
        dilation=dilations,
        padding=pads,
        ceil_mode=False,
    )
    return Value(pool, out_type)


def convert_average_pool(node: OnnxNode) -> Value:
    """AveragePool: nn.avg_pool{1,2,3}d. With count_include_pad=0, ceil_mode becomes extra end
    padding (excluded from the divisor, so the result is the same)."""
    rank = _spatial_rank(node)
    kernel = tuple(node.attr("kernel_shape"))
    strides, dilations, pads = _window_attrs(node, kernel)
    include_pad = bool(node.attr("count_include_pad", 0))
    ceil_mode, out_type = bool(node.attr("ceil_mode", 0)), node.out_type()
    if ceil_mode:
        end_pads, out_type = _ceil_mode_pads(node, kernel, strides, dilations, pads)
        if not include_pad:
            pads, ceil_mode = end_pads, False
    pool = call(
        f"nn.avg_pool{rank}d",
        node.expr(0),
        pool_size=kernel,
        strides=strides,
        dilation=dilations,
        padding=pads,
        ceil_mode=ceil_mode,
        count_include_pad=include_pad,
    )
    return Value(pool, out_type)


def _global_pool(node: OnnxNode, relay_2d: str, reduce: str) -> Expr:
    rank = len(node.shape(0)) - 2
    if rank == 2:
        return call(relay_2d, node.expr(0))
    return call(reduce, node.expr(0), axis=tuple(range(2, rank + 2)), keepdims=True)


def convert_global_average_pool(node: OnnxNode) -> Expr:
    """GlobalAveragePool: nn.global_avg_pool2d (other ranks: mean over the spatial axes)."""
    return _global_pool(node, "nn.global_avg_pool2d", "mean")


def convert_global_max_pool(node: OnnxNode) -> Expr:
    """GlobalMaxPool: nn.global_max_pool2d (other ranks: max over the spatial axes)."""
    return _global_pool(node, "nn.global_max_pool2d", "max")


TABLE: dict[str, tuple[Entry, ...]] = {
    # convolution and pooling
    "Conv": every_opset(convert_conv),
    "MaxPool": every_opset(convert_max_pool),
    "AveragePool": every_opset(convert_average_pool),  # dilations from 19
    "GlobalAveragePool": every_opset(convert_global_average_pool),
    "GlobalMaxPool": every_opset(convert_global_max_pool),
}
