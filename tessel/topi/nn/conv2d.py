"""2-D convolutions (TVM's topi.nn.conv2d family): NCHW with an OIHW filter, NHWC with an HWIO
filter, grouped and depthwise NCHW.

All are one compute (`_conv2d`), parameterised by `groups` (1: a regular convolution; the input
channels: depthwise) and by a `_Form`, the layouts and names of one TVM entry point: a padding
compute (skipped when there is no padding) followed by one reduction compute whose loops are
named as TVM names them, so schedules written for TVM (and tessel.schedule.rules.conv) find the
same loops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessel import te
from tessel.te.tensor import Tensor
from tessel.topi.nn.pad import pad
from tessel.topi.nn.utils import (
    conv_out_extent,
    expect_batched_shape,
    expect_const_shape,
    get_pad_tuple,
    get_pair,
    shape_str,
)
from tessel.topi.utils import expect_rank, expect_tensor, op_error


@dataclass(frozen=True, slots=True)
class _Window:
    """The spatial attributes of a convolution, checked: strides, dilations, paddings and the
    resulting output extent."""

    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int, int, int]  # top, left, bottom, right
    out: tuple[int, int]

    @property
    def has_padding(self) -> bool:
        return any(self.pad)


def _window(
    op: str,
    size: tuple[int, int],
    kernel: tuple[int, int],
    stride: Any,
    padding: Any,
    dilation: Any,
) -> _Window:
    """Check the attributes of a convolution over `size` with a `kernel` (both (h, w))."""
    strides = get_pair(op, "stride", stride)
    dilations = get_pair(op, "dilation", dilation)
    dilated = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    top, left, bottom, right = get_pad_tuple(padding, dilated, op=op)
    out = (
        conv_out_extent(op, size[0], kernel[0], top + bottom, strides[0], dilations[0]),
        conv_out_extent(op, size[1], kernel[1], left + right, strides[1], dilations[1]),
    )
    return _Window(strides, dilations, (top, left, bottom, right), out)


def conv2d(
    input: Tensor,  # noqa: A002  (TVM's name)
    filter: Tensor,  # noqa: A002
    strides: Any,
    padding: Any,
    dilation: Any,
    data_layout: str = "NCHW",
    kernel_layout: str = "",
    out_dtype: str | None = None,
) -> Tensor:
    """A 2-D convolution in `data_layout` "NCHW" (filter OIHW) or "NHWC" (filter HWIO)."""
    defaults = {"NCHW": "OIHW", "NHWC": "HWIO"}
    if data_layout not in defaults:
        raise op_error("conv2d", "data_layout", f"expected 'NCHW' or 'NHWC', got {data_layout!r}")
    if kernel_layout not in ("", defaults[data_layout]):
        raise op_error(
            "conv2d",
            "kernel_layout",
            f"with data_layout {data_layout!r} the filter is "
            f"{defaults[data_layout]!r}, got {kernel_layout!r}",
        )
    expect_tensor("conv2d", "input", input)
    expect_rank("conv2d", "input", input, 4)
    expect_tensor("conv2d", "filter", filter)
    expect_rank("conv2d", "filter", filter, 4)
    if data_layout == "NCHW":
        return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)
    return conv2d_nhwc(input, filter, strides, padding, dilation, out_dtype or input.dtype)


@dataclass(frozen=True, slots=True)
class _Form:
    """The layouts and names of one entry point of the convolution. `filter_layout` is "OIHW"
    (K, C // groups, KH, KW), "HWIO" (KH, KW, C // groups, K) or, for TVM's depthwise filter,
    "CMHW" (C, multiplier, KH, KW): one input channel per group, so no channel reduction."""

    data_layout: str  # "NCHW" or "NHWC"
    filter_layout: str
    pad_name: str
    name: str
    tag: str
    axis_names: tuple[str, ...]  # the output's, in the data layout's order
    # (role, name) of each reduction in the order the sum lists them: "c" the group's input
    # channel (none with a CMHW filter), "h" and "w" the kernel's rows and columns.
    reductions: tuple[tuple[str, str], ...]

    @property
    def spatial_axes(self) -> tuple[int, int]:
        return (2, 3) if self.data_layout == "NCHW" else (1, 2)


_C, _H, _W = ("c", "rc"), ("h", "ry"), ("w", "rx")
_CONV2D_NCHW = _Form(
    "NCHW", "OIHW", "pad_temp", "conv2d_nchw", "conv2d_nchw", ("nn", "ff", "yy", "xx"), (_C, _H, _W)
)
_GROUP_CONV2D_NCHW = _Form(
    "NCHW",
    "OIHW",
    "pad_temp",
    "group_conv2d_nchw",
    "group_conv2d_nchw",
    ("nn", "ff", "yy", "xx"),
    (_C, _H, _W),
)
_DEPTHWISE_CONV2D_NCHW = _Form(
    "NCHW",
    "CMHW",
    "PaddedInput",
    "DepthwiseConv2d",
    "depthwise_conv2d_nchw",
    ("b", "c", "i", "j"),
    (("h", "di"), ("w", "dj")),
)
_CONV2D_NHWC = _Form(
    "NHWC",
    "HWIO",
    "PaddedInput",
    "Conv2dOutput",
    "conv2d_nhwc",
    ("nn", "yy", "xx", "ff"),
    (_H, _W, _C),
)


def conv2d_nchw(
    Input: Tensor,  # noqa: N803  (TVM's names)
    Filter: Tensor,  # noqa: N803
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve Input (N, C, H, W) with Filter (K, C, KH, KW) into (N, K, OH, OW)."""
    return _conv2d(_CONV2D_NCHW, Input, Filter, (stride, padding, dilation), 1, out_dtype)


def group_conv2d_nchw(
    Input: Tensor,  # noqa: N803  (TVM's names)
    Filter: Tensor,  # noqa: N803
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve Input (N, C, H, W) with Filter (K, C // groups, KH, KW): output channel f sees
    only the input channels of its group, f // (K // groups)."""
    return _conv2d(
        _GROUP_CONV2D_NCHW, Input, Filter, (stride, padding, dilation), groups, out_dtype
    )


def conv2d_nhwc(
    Input: Tensor,  # noqa: N803  (TVM's names)
    Filter: Tensor,  # noqa: N803
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str = "float32",
) -> Tensor:
    """Convolve Input (N, H, W, C) with Filter (KH, KW, C, K) into (N, OH, OW, K)."""
    return _conv2d(_CONV2D_NHWC, Input, Filter, (stride, padding, dilation), 1, out_dtype)


def depthwise_conv2d_nchw(
    Input: Tensor,  # noqa: N803  (TVM's names)
    Filter: Tensor,  # noqa: N803
    stride: Any,
    padding: Any,
    dilation: Any,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve each channel of Input (N, C, H, W) separately with `multiplier` kernels of Filter
    (C, multiplier, KH, KW); output channel c * multiplier + q uses kernel (c, q). The grouped
    convolution with groups = C, its filter read as (C * multiplier, 1, KH, KW)."""
    return _conv2d(
        _DEPTHWISE_CONV2D_NCHW, Input, Filter, (stride, padding, dilation), None, out_dtype
    )


def _conv2d(
    form: _Form,
    data: Tensor,
    kernel: Tensor,
    attrs: tuple[Any, Any, Any],
    groups: int | None,
    out_dtype: str | None,
) -> Tensor:
    """The convolution of `data` with `kernel` in `groups` groups (None: one per input
    channel), laid out and named by `form`; `attrs` are (stride, padding, dilation)."""
    op = form.tag  # the entry point's name, in errors
    batch, channels, height, width = _data_extents(op, form, data)
    filters, per_group, kernel_h, kernel_w = _filter_extents(op, form, data, kernel, channels)
    groups = channels if groups is None else groups
    _check_groups(op, groups, channels, filters)
    if per_group * groups != channels:
        axis = form.filter_layout.index("I")
        raise op_error(
            op,
            "Filter",
            f"has {per_group} input channels per group (axis {axis} of {form.filter_layout}) "
            f"but `Input` has {channels} channels in {groups} group(s) "
            f"(shapes {shape_str(data.shape)} and {shape_str(kernel.shape)})",
        )
    window = _window(op, (height, width), (kernel_h, kernel_w), *attrs)
    out_dtype = out_dtype or data.dtype
    padded = _pad_spatial(data, window, form.spatial_axes, form.pad_name)
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    extents = {"c": per_group, "h": kernel_h, "w": kernel_w}
    axes = {role: te.reduce_axis((0, extents[role]), name=name) for role, name in form.reductions}
    rc, ry, rx = axes.get("c"), axes["h"], axes["w"]
    filters_per_group = filters // groups

    def convolve(*out):
        nn, ff, yy, xx = out if form.data_layout == "NCHW" else (out[0], out[3], *out[1:3])
        if groups == 1:
            channel = rc
        elif rc is None:  # one input channel per group
            channel = ff // filters_per_group
        else:
            channel = ff // filters_per_group * per_group + rc
        y, x = yy * stride_h + ry * dilation_h, xx * stride_w + rx * dilation_w
        value = padded[(nn, channel, y, x) if form.data_layout == "NCHW" else (nn, y, x, channel)]
        weight = kernel[_filter_index(form.filter_layout, ff, rc, ry, rx, filters_per_group)]
        return te.sum(value.astype(out_dtype) * weight.astype(out_dtype), axis=list(axes.values()))

    spatial = window.out
    shape = (batch, filters, *spatial) if form.data_layout == "NCHW" else (batch, *spatial, filters)
    return te.compute(shape, convolve, name=form.name, tag=form.tag, varargs_names=form.axis_names)


def _data_extents(op: str, form: _Form, data: Tensor) -> tuple[Any, int, int, int]:
    """(N, C, H, W) of `data` in the form's data layout; N may be symbolic."""
    extents = expect_batched_shape(op, "Input", data, 4)
    if form.data_layout == "NCHW":
        return extents
    batch, height, width, channels = extents
    return batch, channels, height, width


def _filter_extents(
    op: str, form: _Form, data: Tensor, kernel: Tensor, channels: int
) -> tuple[int, int, int, int]:
    """(K, C // groups, KH, KW) of `kernel` in the form's filter layout."""
    extents = expect_const_shape(op, "Filter", kernel, 4)
    if form.filter_layout == "OIHW":
        return extents
    if form.filter_layout == "HWIO":
        kernel_h, kernel_w, per_group, filters = extents
        return filters, per_group, kernel_h, kernel_w
    filter_channels, multiplier, kernel_h, kernel_w = extents  # CMHW
    if filter_channels != channels:
        raise op_error(
            op,
            "Filter",
            f"has {filter_channels} channels (axis 0) but `Input` has "
            f"{channels} (shapes {shape_str(data.shape)} and {shape_str(kernel.shape)})",
        )
    return channels * multiplier, 1, kernel_h, kernel_w


def _filter_index(
    layout: str, ff: Any, rc: Any, ry: Any, rx: Any, multiplier: int
) -> tuple[Any, ...]:
    """Where the filter holds the weight of output channel ff, group channel rc, tap (ry, rx)."""
    if layout == "OIHW":
        return ff, rc, ry, rx
    if layout == "HWIO":
        return ry, rx, rc, ff
    return ff // multiplier, ff % multiplier, ry, rx  # CMHW: (C * multiplier, 1) as (C, multiplier)


def _check_groups(op: str, groups: Any, channels: int, filters: int) -> None:
    """`groups` must divide both the input channels and the filters."""
    valid = isinstance(groups, int) and not isinstance(groups, bool) and groups >= 1
    if not valid or channels % groups or filters % groups:
        raise op_error(
            op,
            "groups",
            f"expected a positive divisor of the input channels ({channels}) and of the filters "
            f"({filters}), got {groups!r}",
        )


def _pad_spatial(data: Tensor, window: _Window, axes: tuple[int, int], name: str) -> Tensor:
    """`data` zero-padded on its two spatial `axes`, or `data` itself when there is no padding."""
    if not window.has_padding:
        return data
    top, left, bottom, right = window.pad
    before, after = [0] * data.ndim, [0] * data.ndim
    before[axes[0]], before[axes[1]] = top, left
    after[axes[0]], after[axes[1]] = bottom, right
    return pad(data, before, after, 0.0, name=name)
