"""Sliding-window arithmetic shared by convolution and pooling: attribute checks, output
extents (as TOPI computes them), and the NumPy windows the references reduce over."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tessel.arith.analyzer import Analyzer
from tessel.graph.op.op_def import Args


def pair(args: Args, name: str, values: Sequence[int], minimum: int = 1) -> tuple[int, int]:
    """Attribute `name` as (h, w): one int or two, each at least `minimum`."""
    items = tuple(values) * 2 if len(values) == 1 else tuple(values)
    if len(items) != 2 or any(v < minimum for v in items):
        raise args.error(name, f"must be one or two integers >= {minimum}, got {list(values)}")
    return items[0], items[1]


def sides(args: Args, name: str, values: Sequence[int]) -> tuple[int, int, int, int]:
    """Attribute `name` (a padding) as (top, left, bottom, right) from 1, 2 or 4 integers."""
    if len(values) not in (1, 2, 4) or any(v < 0 for v in values):
        raise args.error(
            name,
            "must be 1, 2 or 4 non-negative integers (top, left, bottom, right), "
            f"got {list(values)}",
        )
    return four(values)


def conv_extent(
    args: Args, size: int, kernel: int, pad_total: int, stride: int, dilation: int
) -> int:
    """The output extent of a convolution along one axis (TOPI's conv_out_extent)."""
    dilated = (kernel - 1) * dilation + 1
    if isinstance(size, int) and size + pad_total < dilated:  # a symbolic size: checked per call
        raise args.error(
            "data",
            f"has a padded spatial extent {size + pad_total} smaller than the dilated kernel "
            f"extent {dilated}",
        )
    return (size + pad_total - dilated) // stride + 1


def pool_extent(
    args: Args,
    size: int,
    kernel: int,
    stride: int,
    dilation: int,
    pads: tuple[int, int],
    ceil_mode: bool,
) -> int:
    """The output extent of a pooling along one axis (checked; see `pooled_extent`)."""
    if isinstance(size, int) and size + pads[0] + pads[1] < dilation * (kernel - 1) + 1:
        raise args.error(
            "pool_size",
            f"gives a dilated window ({dilation * (kernel - 1) + 1}) larger than the padded "
            f"input ({size + pads[0] + pads[1]})",
        )
    return pooled_extent(size, kernel, stride, dilation, pads, ceil_mode)


def pooled_extent(
    size: int, kernel: int, stride: int, dilation: int, pads: tuple[int, int], ceil_mode: bool
) -> int:
    """As TOPI's pool2d: rounding down, or up with `ceil_mode` as long as the last window starts
    inside the input or its leading padding (PyTorch's and ONNX's rule)."""
    span = size + pads[0] + pads[1] - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if not ceil_mode:
        return out
    if isinstance(out, int):
        return out - 1 if (out - 1) * stride >= size + pads[0] else out
    # A symbolic size: the last window's rule must hold (or fail) for every size.
    analyzer = Analyzer()
    if analyzer.can_prove((out - 1) * stride < size + pads[0]):
        return out
    if analyzer.can_prove((out - 1) * stride >= size + pads[0]):
        return out - 1
    raise TypeError(f"ceil_mode's last window depends on the size {size}")


def reference_windows(
    data: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    fill: float,
    out: Sequence[int] | None = None,
) -> np.ndarray:
    """The windows of an (N, C, H, W) array: (N, C, OH, OW, KH, KW), padded with `fill`;
    `out` (OH, OW) asks for more windows than the padding gives (ceil mode)."""
    (sh, sw), (dh, dw) = two(strides), two(dilation)
    top, left, bottom, right = padding
    span_h, span_w = (kernel[0] - 1) * dh + 1, (kernel[1] - 1) * dw + 1
    if out is not None:  # pad the far sides so that every requested window exists
        bottom = max(bottom, (out[0] - 1) * sh + span_h - data.shape[2] - top)
        right = max(right, (out[1] - 1) * sw + span_w - data.shape[3] - left)
    padded = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    windows = sliding_window_view(padded, (span_h, span_w), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw]
    if out is not None:
        windows = windows[:, :, : out[0], : out[1]]
    return windows


def two(values: Sequence[int]) -> tuple[int, int]:
    """(h, w) from one int or two (strides, dilations, kernel sizes as Relay stores them)."""
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def four(padding: Sequence[int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from 1, 2 or 4 ints (a padding as Relay stores it)."""
    if len(padding) == 1:
        return (padding[0],) * 4
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    return padding[0], padding[1], padding[2], padding[3]
