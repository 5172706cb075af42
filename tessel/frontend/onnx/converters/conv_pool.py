"""Convolution (NC + spatial layouts, 1-3 spatial dimensions): Conv, ConvTranspose, DeformConv
(deform.py); with the pools of pooling.py, the converters of this family.

ONNX pads list every spatial dimension's start, then every end; Relay's `padding` uses the same
order ((top, left, bottom, right) in 2-D), so pads pass through once auto_pad is resolved.
1-D convolutions run as 2-D ones over a unit height (the tuned nn.conv2d); 3-D ones and the
transposed convolutions have operators of their own (tessel.graph.op.conv_nd).
"""

from __future__ import annotations

from tessel.frontend.onnx.converters import deform
from tessel.frontend.onnx.converters.windows import Window, spatial_rank, window_of
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call
from tessel.graph.expr import Expr


def _conv2d(data: Expr, weight: Expr, window: Window, groups: int, channels: int) -> Expr:
    """nn.conv2d over `window` (the tuned 2-D convolution)."""
    return call(
        "nn.conv2d",
        data,
        weight,
        strides=window.strides,
        padding=window.pads,
        dilation=window.dilations,
        groups=groups,
        channels=channels,
        kernel_size=window.kernel,
    )


def _conv1d(node: OnnxNode, window: Window, groups: int) -> Expr:
    """A 1-D convolution as a 2-D one over a unit height."""
    (n, c, length), (o, i, k) = node.shape(0), node.shape(1)
    data = call("reshape", node.expr(0), newshape=(n, c, 1, length))
    weight = call("reshape", node.expr(1), newshape=(o, i, 1, k))
    (s,), (d,), (begin, end) = window.strides, window.dilations, window.pads
    flat = Window((1, k), (1, s), (1, d), (0, begin, 0, end))
    out = _conv2d(data, weight, flat, groups, o)
    return call("reshape", out, newshape=node.out_type().shape)


def _kernel(node: OnnxNode) -> tuple[int, ...]:
    """The kernel's spatial shape: the weight's, which `kernel_shape` may only repeat."""
    weight_shape = node.shape(1)
    kernel = tuple(node.attr("kernel_shape", weight_shape[2:]))
    if kernel != tuple(weight_shape[2:]):
        raise node.error(
            f"kernel_shape {list(kernel)} differs from the weight's {list(weight_shape[2:])}"
        )
    return kernel


def convert_conv(node: OnnxNode) -> Expr:
    """Conv (optionally grouped or depthwise, with bias): nn.conv2d (1-D over a unit height),
    nn.conv3d [+ nn.bias_add]."""
    rank = spatial_rank(node)
    kernel = _kernel(node)
    window, groups = window_of(node, kernel), int(node.attr("group", 1))
    if rank == 1:
        out = _conv1d(node, window, groups)
    elif rank == 2:
        out = _conv2d(node.expr(0), node.expr(1), window, groups, node.shape(1)[0])
    else:
        out = call(
            "nn.conv3d",
            node.expr(0),
            node.expr(1),
            strides=window.strides,
            padding=window.pads,
            dilation=window.dilations,
            groups=groups,
            channels=node.shape(1)[0],
            kernel_size=kernel,
        )
    if node.has_input(2):
        out = call("nn.bias_add", out, node.expr(2), axis=1)
    return out


def _transpose_pads(
    node: OnnxNode, window: Window, extra: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(pads, output_padding) of a ConvTranspose: from output_shape or auto_pad SAME (the total
    padding split as the spec says: SAME_UPPER puts the odd one at the end), else as given. An
    output_shape beyond the full result adds zeros at the end, as onnxruntime does."""
    sizes, rank = node.shape(0)[2:], window.rank
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if output_shape is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        given = (0,) * (2 * rank) if auto_pad == "VALID" else node.attr("pads", [0] * 2 * rank)
        return tuple(given), extra
    wanted = (
        list(output_shape)[-rank:]
        if output_shape is not None
        else [size * s for size, s in zip(sizes, window.strides, strict=True)]
    )
    begins, ends, padding = [], [], list(extra)
    for d in range(rank):
        full = (sizes[d] - 1) * window.strides[d] + extra[d] + window.span(d)
        total = full - wanted[d]
        if total < 0:
            padding[d] -= total
            total = 0
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begins, *ends), tuple(padding)


def convert_conv_transpose(node: OnnxNode) -> Expr:
    """ConvTranspose (groups, dilations, output_padding, output_shape, auto_pad):
    nn.conv{1,2,3}d_transpose [+ nn.bias_add]."""
    rank = spatial_rank(node)
    kernel = _kernel(node)
    strides = tuple(node.attr("strides", [1] * rank))
    dilations = tuple(node.attr("dilations", [1] * rank))
    window = Window(kernel, strides, dilations, (0,) * (2 * rank))
    extra = tuple(node.attr("output_padding", [0] * rank))
    pads, output_padding = _transpose_pads(node, window, extra)
    groups = int(node.attr("group", 1))
    out = call(
        f"nn.conv{rank}d_transpose",
        node.expr(0),
        node.expr(1),
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=groups,
        output_padding=output_padding,
        channels=node.shape(1)[1] * groups,
        kernel_size=kernel,
    )
    if node.has_input(2):
        out = call("nn.bias_add", out, node.expr(2), axis=1)
    return out


TABLE: dict[str, tuple[Entry, ...]] = {
    "Conv": every_opset(convert_conv),
    "ConvTranspose": every_opset(convert_conv_transpose),
    "DeformConv": every_opset(deform.convert_deform_conv, first=19),
}
