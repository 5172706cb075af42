"""2-D convolutions over channel-blocked data (TVM's topi.nn.conv2d_NCHWc and
depthwise_conv2d_NCHWc, and group_conv2d_NCHWc): data (N, C // ic_bn, H, W, ic_bn), output (N,
K // oc_bn, OH, OW, oc_bn), so that oc_bn output channels are one contiguous vector.

conv2d_NCHWc's kernel is (K // oc_bn, C // ic_bn, KH, KW, ic_bn, oc_bn) ("OIHW{ic_bn}i
{oc_bn}o"); depthwise_conv2d_NCHWc's is (K // oc_bn, 1, KH, KW, 1, oc_bn) ("OIHW1i{oc_bn}o"),
output channel k reading input channel k // multiplier; group_conv2d_NCHWc's is (K // oc_bn,
(C // groups) // k_bn, KH, KW, k_bn, oc_bn), the OIHW kernel whose I is a group's C // groups
channels blocked as OIHW[k_bn]i[oc_bn]o, with oc_bn dividing a group's K // groups outputs so
that a block of output channels reads one group. The input-channel reduction is two axes,
ic_outer and ic_inner, rather than TVM's single `ic` split by `//` and `%`: the loops a schedule
tiles are then the ones the compute has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel import te
from tessel.te.tensor import Tensor
from tessel.topi.layout import layout
from tessel.topi.nn.conv2d import _pad_spatial, _window
from tessel.topi.nn.utils import expect_const_shape, shape_str
from tessel.topi.utils import op_error


def _blocked(op: str, name: str, value: str, primal: str, block_axis: str) -> int:
    """The factor of `block_axis` in layout `value`, which must be `primal` with that axis split
    last (as "NCHW16c"; "NCHW1c" for a block of one)."""
    parsed = layout(value)
    if not parsed.is_blocked(primal, block_axis):
        raise op_error(
            op, name, f"expected {primal}[x]{block_axis} (as {primal}16{block_axis}), got {value!r}"
        )
    return parsed.factor(block_axis.upper())


def conv2d_NCHWc(  # noqa: N802  (TVM's name)
    data: Tensor,
    kernel: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve blocked `data` (N, C // ic_bn, H, W, ic_bn) with `kernel` (K // oc_bn, C // ic_bn,
    KH, KW, ic_bn, oc_bn) into (N, K // oc_bn, OH, OW, oc_bn); `layout` and `out_layout` name
    the blocks ("NCHW16c")."""
    op = "conv2d_NCHWc"
    batch, in_chunks, height, width, ic_bn = expect_const_shape(op, "data", data, 5)
    oc_chunks, k_chunks, kernel_h, kernel_w, k_ic_bn, oc_bn = expect_const_shape(
        op, "kernel", kernel, 6
    )
    _check_blocks(op, layout, out_layout, ic_bn, oc_bn)
    if (k_chunks, k_ic_bn) != (in_chunks, ic_bn):
        raise op_error(
            op,
            "kernel",
            f"reads {k_chunks} x {k_ic_bn} input channels but `data` has {in_chunks} x {ic_bn} "
            f"(shapes {shape_str(data.shape)} and {shape_str(kernel.shape)})",
        )
    window = _window(op, (height, width), (kernel_h, kernel_w), stride, padding, dilation)
    return _blocked_conv(
        data, kernel, window, out_dtype, "conv2d_NCHWc", lambda oc_chunk, io, ii: (io, ii)
    )


def _blocked_conv(
    data: Tensor,
    kernel: Tensor,
    window: Any,
    out_dtype: str | None,
    tag: str,
    input_at: Callable[[Any, Any, Any], tuple[Any, Any]],
) -> Tensor:
    """The reduction of conv2d_NCHWc and group_conv2d_NCHWc over (ic_outer, kh, kw, ic_inner),
    the kernel's axes: `input_at(oc_chunk, ic_outer, ic_inner)` is the (chunk, lane) of the
    input channel that output block reads."""
    batch, oc_chunks, oc_bn = data.shape[0], kernel.shape[0], kernel.shape[5]
    out_dtype = out_dtype or data.dtype
    padded = _pad_spatial(data, window, (2, 3), "data_pad")
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    ic_outer = te.reduce_axis((0, kernel.shape[1]), name="ic_outer")
    kh = te.reduce_axis((0, kernel.shape[2]), name="kh")
    kw = te.reduce_axis((0, kernel.shape[3]), name="kw")
    ic_inner = te.reduce_axis((0, kernel.shape[4]), name="ic_inner")

    def convolve(n, oc_chunk, oh, ow, oc_block):
        chunk, lane = input_at(oc_chunk, ic_outer, ic_inner)
        y, x = oh * stride_h + kh * dilation_h, ow * stride_w + kw * dilation_w
        value = padded[n, chunk, y, x, lane].astype(out_dtype)
        weight = kernel[oc_chunk, ic_outer, kh, kw, ic_inner, oc_block].astype(out_dtype)
        return te.sum(value * weight, axis=[ic_outer, kh, kw, ic_inner])

    shape = (batch, oc_chunks, *window.out, oc_bn)
    return te.compute(shape, convolve, name="conv2d_NCHWc", tag=tag)


def group_conv2d_NCHWc(  # noqa: N802  (TVM's naming)
    data: Tensor,
    kernel: Tensor,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve blocked `data` (N, C // ic_bn, H, W, ic_bn) in `groups` groups with `kernel`
    (K // oc_bn, (C // groups) // k_bn, KH, KW, k_bn, oc_bn) into (N, K // oc_bn, OH, OW, oc_bn):
    output channel k sees only the input channels of its group, k // (K // groups)."""
    op = "group_conv2d_NCHWc"
    batch, in_chunks, height, width, ic_bn = expect_const_shape(op, "data", data, 5)
    oc_chunks, k_chunks, kernel_h, kernel_w, k_bn, oc_bn = expect_const_shape(
        op, "kernel", kernel, 6
    )
    _check_blocks(op, layout, out_layout, ic_bn, oc_bn)
    channels, filters, per_group = in_chunks * ic_bn, oc_chunks * oc_bn, k_chunks * k_bn
    if groups < 1 or channels != groups * per_group or filters % groups:
        raise op_error(
            op,
            "kernel",
            f"reads {per_group} input channels a group, but `data` has {channels} channels in "
            f"{groups} groups and the kernel {filters} filters "
            f"(shapes {shape_str(data.shape)} and {shape_str(kernel.shape)})",
        )
    outputs = filters // groups
    if outputs % oc_bn:
        raise op_error(
            op,
            "out_layout",
            f"blocks by {oc_bn}, which does not divide a group's {outputs} output channels",
        )
    window = _window(op, (height, width), (kernel_h, kernel_w), stride, padding, dilation)
    blocks_a_group = outputs // oc_bn

    def input_at(oc_chunk, ic_outer, ic_inner):
        group = oc_chunk // blocks_a_group if blocks_a_group > 1 else oc_chunk
        # The input channel group * per_group + ic_outer * k_bn + ic_inner, as (chunk, lane);
        # where the blocks nest, without a division by ic_bn (the lane is ic_inner plus an
        # offset, so the rule's vectors broadcast one input element).
        if k_bn == ic_bn and per_group % ic_bn == 0:
            return group * (per_group // ic_bn) + ic_outer, ic_inner
        if k_chunks == 1 and ic_bn % per_group == 0:
            groups_a_chunk = ic_bn // per_group  # at least 2: one group a chunk is the case above
            return group // groups_a_chunk, (group % groups_a_chunk) * per_group + ic_inner
        channel = group * per_group + ic_outer * k_bn + ic_inner
        return channel // ic_bn, channel % ic_bn

    return _blocked_conv(data, kernel, window, out_dtype, "group_conv2d_NCHWc", input_at)


def depthwise_conv2d_NCHWc(  # noqa: N802  (TVM's name)
    Input: Tensor,  # noqa: N803  (TVM's names)
    Filter: Tensor,  # noqa: N803
    stride: Any,
    padding: Any,
    dilation: Any,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolve each channel of blocked `Input` (N, C // ic_bn, H, W, ic_bn) with its
    `multiplier` kernels of `Filter` (K // oc_bn, 1, KH, KW, 1, oc_bn), K = C * multiplier, into
    (N, K // oc_bn, OH, OW, oc_bn); output channel k reads input channel k // multiplier."""
    op = "depthwise_conv2d_NCHWc"
    batch, in_chunks, height, width, ic_bn = expect_const_shape(op, "Input", Input, 5)
    oc_chunks, one, kernel_h, kernel_w, one_i, oc_bn = expect_const_shape(op, "Filter", Filter, 6)
    _check_blocks(op, layout, out_layout, ic_bn, oc_bn)
    channels, filters = in_chunks * ic_bn, oc_chunks * oc_bn
    if (one, one_i) != (1, 1) or filters % channels:
        raise op_error(
            op,
            "Filter",
            f"expected (K // oc_bn, 1, KH, KW, 1, oc_bn) with K a multiple of the {channels} "
            f"input channels, got {shape_str(Filter.shape)}",
        )
    multiplier = filters // channels
    window = _window(op, (height, width), (kernel_h, kernel_w), stride, padding, dilation)
    out_dtype = out_dtype or Input.dtype
    padded = _pad_spatial(Input, window, (2, 3), "PaddedInput")
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    di = te.reduce_axis((0, kernel_h), name="di")
    dj = te.reduce_axis((0, kernel_w), name="dj")

    def convolve(b, oco, i, j, oci):
        if multiplier == 1 and ic_bn == oc_bn:  # output channel block k reads input block k
            chunk, lane = oco, oci
        else:
            channel = (oco * oc_bn + oci) // multiplier
            chunk, lane = channel // ic_bn, channel % ic_bn
        y, x = i * stride_h + di * dilation_h, j * stride_w + dj * dilation_w
        value = padded[b, chunk, y, x, lane].astype(out_dtype)
        weight = Filter[oco, 0, di, dj, 0, oci].astype(out_dtype)
        return te.sum(value * weight, axis=[di, dj])

    shape = (batch, oc_chunks, *window.out, oc_bn)
    return te.compute(shape, convolve, name="DepthwiseConv2d", tag="depthwise_conv2d_NCHWc")


def _check_blocks(op: str, data_layout: str, out_layout: str, ic_bn: int, oc_bn: int) -> None:
    """The layouts' blocks must be the tensors' last extents."""
    if _blocked(op, "layout", data_layout, "NCHW", "c") != ic_bn:
        raise op_error(
            op, "layout", f"{data_layout!r} does not block by {ic_bn}, the data's last extent"
        )
    if _blocked(op, "out_layout", out_layout, "NCHW", "c") != oc_bn:
        raise op_error(
            op, "out_layout", f"{out_layout!r} does not block by {oc_bn}, the kernel's last extent"
        )
