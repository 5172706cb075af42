"""Sliding-window attributes shared by convolution and pooling converters: strides, dilations
and pads with auto_pad resolved, ceil_mode as extra end padding, and 1-D/3-D windows run by
the 2-D operators (1-D as 2-D over a unit height; 3-D max/average pools as a 2-D pool over H
and W followed by one over D, exact since both reductions are separable)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call
from tessel.graph.expr import Expr


@dataclass(frozen=True)
class Window:
    """The windows of a convolution or pooling node: per spatial axis kernel, stride, dilation;
    pads lists every spatial start, then every end (ONNX's order)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.kernel)

    def span(self, axis: int) -> int:
        """The extent the dilated kernel covers along spatial `axis`."""
        return (self.kernel[axis] - 1) * self.dilations[axis] + 1


def spatial_rank(node: OnnxNode) -> int:
    """The number of spatial axes of input 0: 1, 2 or 3, else a clean error."""
    rank = len(node.shape(0)) - 2
    if rank not in (1, 2, 3):
        raise node.error(f"input of rank {rank + 2}: Tessel imports 1-D, 2-D and 3-D windows")
    return rank


def window_of(node: OnnxNode, kernel: tuple[int, ...]) -> Window:
    """The node's window with auto_pad resolved against input 0's spatial extents."""
    rank = len(kernel)
    strides = tuple(node.attr("strides", [1] * rank))
    dilations = tuple(node.attr("dilations", [1] * rank))
    pads = tuple(node.attr("pads", [0] * (2 * rank)))
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise node.error(
            f"strides {list(strides)}, dilations {list(dilations)} and pads "
            f"{list(pads)} do not fit a {rank}-D kernel"
        )
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        pads = (0,) * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_pads(node.shape(0)[2:], kernel, strides, dilations, auto_pad == "SAME_UPPER")
    elif auto_pad != "NOTSET":
        raise node.error(f"unknown auto_pad {auto_pad!r}")
    return Window(kernel, strides, dilations, pads)


def same_pads(
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


def ceil_mode_window(shape: tuple[int, ...], window: Window) -> tuple[Window, tuple[int, ...]]:
    """The window whose end pads make floor rounding give ceil_mode's window counts, and those
    counts. ceil_mode rounds the count up, except that a last window starting in the end padding
    is dropped (onnxruntime and PyTorch; ONNX's shape inference in onnx 1.23 still counts it)."""
    rank, ends, counts = window.rank, list(window.pads[window.rank :]), []
    for dim in range(rank):
        size, stride = shape[2 + dim], window.strides[dim]
        padded = size + window.pads[dim] + ends[dim]
        count = -(-(padded - window.span(dim)) // stride) + 1
        if (count - 1) * stride >= size + window.pads[dim]:
            count -= 1
        ends[dim] += max(0, (count - 1) * stride + window.span(dim) - padded)
        counts.append(count)
    return replace(window, pads=(*window.pads[:rank], *ends)), tuple(counts)


def pool(
    name: str,
    data: Expr,
    shape: tuple[int, ...],
    out: tuple[int, ...],
    window: Window,
    **attrs: object,
) -> Expr:
    """nn.{name}_pool2d over the spatial axes of `data` (1-D, 2-D or 3-D), of result shape `out`."""
    if window.rank == 2:
        return _pool2d(name, data, window, **attrs)
    if window.rank == 1:
        flat = call("reshape", data, newshape=(*shape[:2], 1, shape[2]))
        (k,), (s,), (d,), (begin, end) = (window.kernel, window.strides, window.dilations,
                                          window.pads)  # fmt: skip
        pooled = _pool2d(name, flat, Window((1, k), (1, s), (1, d), (0, begin, 0, end)), **attrs)
        return call("reshape", pooled, newshape=out)
    n, c, depth, height, width = shape
    planes = call("reshape", data, newshape=(n, c * depth, height, width))
    k, s, d, p = window.kernel, window.strides, window.dilations, window.pads
    inner = Window(k[1:], s[1:], d[1:], (p[1], p[2], p[4], p[5]))
    pooled = _pool2d(name, planes, inner, **attrs)
    columns = call("reshape", pooled, newshape=(n, c, depth, out[3] * out[4]))
    outer = Window((k[0], 1), (s[0], 1), (d[0], 1), (p[0], 0, p[3], 0))
    return call("reshape", _pool2d(name, columns, outer, **attrs), newshape=out)


def _pool2d(name: str, data: Expr, window: Window, **attrs: object) -> Expr:
    """nn.{name}_pool2d over a 2-D `window`."""
    return call(
        f"nn.{name}_pool2d",
        data,
        pool_size=window.kernel,
        strides=window.strides,
        dilation=window.dilations,
        padding=window.pads,
        **attrs,
    )
