"""Pooling over H and W: nn.max_pool2d, nn.avg_pool2d, the global and adaptive pools; in NCHW,
NHWC or channel-blocked NCHW[x]c (what AlterOpLayout carries between convolutions)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import topi
from tessel.graph.op.common import same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.op.window import (
    four,
    pair,
    pool_extent,
    pooled_extent,
    reference_windows,
    sides,
    two,
)
from tessel.graph.ty import TensorType, Type
from tessel.topi.layout import LayoutError, layout, transform_array

_LAYOUTS = ("NCHW", "NHWC")


def _block(text: str) -> int:
    """The channel block of an NCHW[x]c layout, 0 for any other (NCHW, NHWC, not a layout)."""
    try:
        parsed = layout(text)
    except LayoutError:
        return 0
    return parsed.factor("C") if parsed.is_blocked("NCHW", "c") else 0


def _layout_axes(args: Args, attrs: Attrs) -> tuple[TensorType, int, int]:
    """The data and the positions of its H and W axes."""
    block = _block(attrs.layout)
    if attrs.layout not in _LAYOUTS and not block:
        raise args.error(
            "layout", f"must be one of {list(_LAYOUTS)} or NCHW[x]c, got {attrs.layout!r}"
        )
    data = args.tensor("data", ndim=5 if block else 4)
    if block and data.shape[4] != block:
        raise args.error("data", f"has blocks of {data.shape[4]} channels, not {attrs.layout!r}'s")
    return data, attrs.layout.index("H"), attrs.layout.index("W")


def _with_hw(data: TensorType, h_axis: int, w_axis: int, height: int, width: int) -> TensorType:
    shape = list(data.shape)
    shape[h_axis], shape[w_axis] = height, width
    return same_as(data, shape)


def _to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    if _block(layout):
        return transform_array(x, layout, "NCHW")
    return x.transpose(0, 3, 1, 2) if layout == "NHWC" else x


def _from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    if _block(layout):
        return transform_array(x, "NCHW", layout)
    return x.transpose(0, 2, 3, 1) if layout == "NHWC" else x


# --- max_pool2d / avg_pool2d -------------------------------------------------------------------


def _pool_geometry(
    args: Args, attrs: Attrs, data: TensorType, h_axis: int, w_axis: int
) -> tuple[int, int]:
    kh, kw = pair(args, "pool_size", attrs.pool_size)
    sh, sw = pair(args, "strides", attrs.strides)
    dh, dw = pair(args, "dilation", attrs.dilation)
    top, left, bottom, right = sides(args, "padding", attrs.padding)
    oh = pool_extent(args, data.shape[h_axis], kh, sh, dh, (top, bottom), attrs.ceil_mode)
    ow = pool_extent(args, data.shape[w_axis], kw, sw, dw, (left, right), attrs.ceil_mode)
    return oh, ow


def _pool_rel(args: Args, attrs: Attrs) -> Type:
    data, h_axis, w_axis = _layout_axes(args, attrs)
    return _with_hw(data, h_axis, w_axis, *_pool_geometry(args, attrs, data, h_axis, w_axis))


def _pool_lower(pool_type: str) -> Callable:
    def lower(data, *, attrs: Attrs):
        return topi.nn.pool2d(
            data,
            two(attrs.pool_size),
            two(attrs.strides),
            two(attrs.dilation),
            four(attrs.padding),
            pool_type,
            attrs.ceil_mode,
            attrs.layout,
            attrs.get("count_include_pad", True),
        )

    return lower


def _output_hw(x: np.ndarray, attrs: Attrs) -> tuple[int, int]:
    """(OH, OW) of a pooling of NCHW `x`, as the type relation computes them."""
    kernel, strides, dilation = two(attrs.pool_size), two(attrs.strides), two(attrs.dilation)
    top, left, bottom, right = four(attrs.padding)
    return (
        pooled_extent(
            x.shape[2], kernel[0], strides[0], dilation[0], (top, bottom), attrs.ceil_mode
        ),
        pooled_extent(
            x.shape[3], kernel[1], strides[1], dilation[1], (left, right), attrs.ceil_mode
        ),
    )


def _windows(x: np.ndarray, attrs: Attrs, fill: float) -> np.ndarray:
    out = _output_hw(x, attrs)
    return reference_windows(
        x, two(attrs.pool_size), attrs.strides, attrs.dilation, four(attrs.padding), fill, out
    )


def _max_pool_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    x = _to_nchw(data, attrs.layout)
    floor = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    out = _windows(x, attrs, floor).max(axis=(-2, -1))
    return _from_nchw(out, attrs.layout).astype(data.dtype)


def _avg_pool_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    x = _to_nchw(data, attrs.layout)
    wide = np.float64 if np.issubdtype(x.dtype, np.floating) else np.int64
    total = _windows(x.astype(wide), attrs, 0).sum(axis=(-2, -1))
    top, left, bottom, right = four(attrs.padding)
    ones = np.ones((1, 1, *x.shape[2:]), np.int64)
    if attrs.count_include_pad:  # the explicit padding counts, the ceil-mode overhang does not
        ones = np.pad(ones, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=1)
        top = left = bottom = right = 0
    counted = reference_windows(
        ones,
        two(attrs.pool_size),
        attrs.strides,
        attrs.dilation,
        (top, left, bottom, right),
        0,
        total.shape[2:],
    ).sum(axis=(-2, -1))
    count = np.maximum(counted, 1)
    out = total / count if wide is np.float64 else np.trunc(total / count)
    return _from_nchw(out, attrs.layout).astype(data.dtype)


_POOL_ATTRS = (
    Attr("pool_size", "ints", (1, 1)),
    Attr("strides", "ints", (1, 1)),
    Attr("dilation", "ints", (1, 1)),
    Attr("padding", "ints", (0, 0)),
    Attr("layout", "str", "NCHW"),
    Attr("out_layout", "str", ""),
    Attr("ceil_mode", "bool", False),
)


# --- global and adaptive pools -----------------------------------------------------------------


def _global_rel(args: Args, attrs: Attrs) -> Type:
    data, h_axis, w_axis = _layout_axes(args, attrs)
    return _with_hw(data, h_axis, w_axis, 1, 1)


def _global_ref(reduce: Callable) -> Callable:
    def reference(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        axes = (attrs.layout.index("H"), attrs.layout.index("W"))
        wide = data.astype(np.float64) if np.issubdtype(data.dtype, np.floating) else data
        return reduce(wide, axis=axes, keepdims=True).astype(data.dtype)

    return reference


def _adaptive_size(attrs: Attrs, height: int, width: int) -> tuple[int, int]:
    size = attrs.output_size or ()
    if len(size) == 0:
        return height, width
    return (size[0], size[0]) if len(size) == 1 else (size[0], size[1])


def _adaptive_rel(args: Args, attrs: Attrs) -> Type:
    data, h_axis, w_axis = _layout_axes(args, attrs)
    size = attrs.output_size or ()
    if len(size) > 2 or any(s < 1 for s in size):
        raise args.error("output_size", f"must be one or two positive integers, got {list(size)}")
    return _with_hw(
        data, h_axis, w_axis, *_adaptive_size(attrs, data.shape[h_axis], data.shape[w_axis])
    )


def _adaptive_ref(reduce: Callable) -> Callable:
    def reference(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        x = _to_nchw(data, attrs.layout)
        height, width = x.shape[2:]
        oh, ow = _adaptive_size(attrs, height, width)
        out = np.zeros((*x.shape[:2], oh, ow), np.float64)
        for i in range(oh):
            y0, y1 = i * height // oh, -(-(i + 1) * height // oh)
            for j in range(ow):
                x0, x1 = j * width // ow, -(-(j + 1) * width // ow)
                out[:, :, i, j] = reduce(x[:, :, y0:y1, x0:x1].astype(np.float64), axis=(2, 3))
        return _from_nchw(out, attrs.layout).astype(data.dtype)

    return reference


def _adaptive_lower(pool_type: str) -> Callable:
    def lower(data, *, attrs: Attrs):
        shape = data.const_shape()
        h, w = attrs.layout.index("H"), attrs.layout.index("W")
        size = _adaptive_size(attrs, shape[h], shape[w])
        return topi.nn.adaptive_pool(data, size, pool_type, attrs.layout)

    return lower


_LAYOUT_ATTRS = (Attr("layout", "str", "NCHW"), Attr("out_layout", "str", ""))
_ADAPTIVE_ATTRS = (Attr("output_size", "ints", None, optional=True), *_LAYOUT_ATTRS)

OPERATORS = (
    OpDef(
        "nn.max_pool2d",
        ("data",),
        _POOL_ATTRS,
        _pool_rel,
        _pool_lower("max"),
        _max_pool_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "Max pooling over H and W.",
    ),
    OpDef(
        "nn.avg_pool2d",
        ("data",),
        (*_POOL_ATTRS, Attr("count_include_pad", "bool", False)),
        _pool_rel,
        _pool_lower("avg"),
        _avg_pool_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "Average pooling over H and W.",
    ),
    OpDef(
        "nn.global_avg_pool2d",
        ("data",),
        _LAYOUT_ATTRS,
        _global_rel,
        lambda x, *, attrs: topi.nn.global_pool(x, "avg", attrs.layout),
        _global_ref(np.mean),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "The mean over all of H and W.",
    ),
    OpDef(
        "nn.global_max_pool2d",
        ("data",),
        _LAYOUT_ATTRS,
        _global_rel,
        lambda x, *, attrs: topi.nn.global_pool(x, "max", attrs.layout),
        _global_ref(np.max),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "The maximum over all of H and W.",
    ),
    OpDef(
        "nn.adaptive_avg_pool2d",
        ("data",),
        _ADAPTIVE_ATTRS,
        _adaptive_rel,
        _adaptive_lower("avg"),
        _adaptive_ref(np.mean),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "Average pooling to `output_size` with PyTorch's windows.",
    ),
    OpDef(
        "nn.adaptive_max_pool2d",
        ("data",),
        _ADAPTIVE_ATTRS,
        _adaptive_rel,
        _adaptive_lower("max"),
        _adaptive_ref(np.max),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "Max pooling to `output_size` with PyTorch's windows.",
    ),
)

__all__ = ["OPERATORS"]
