"""Direct and transposed convolutions of any spatial rank in NC + spatial layout (conv3d and the
transposed convolutions of ONNX's ConvTranspose), as one plain reduction each.

The 2-D convolution keeps its tuned computes (conv2d.py); these serve the ranks and options
(dilated transposed convolution, 3-D) that have none. Padding (and the transposed
convolution's zero insertion) is a stage of its own, so the reductions carry no guards: guards
inside deep reduction nests make loop unswitching's proofs very slow.
"""

from __future__ import annotations

from collections.abc import Sequence

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.nn.pad import pad
from tessel.topi.nn.utils import expect_const_shape
from tessel.topi.utils import op_error


def _guard(conditions: list[PrimExpr]) -> PrimExpr | None:
    return builders.conjunction(conditions) if conditions else None


def _check_groups(op: str, groups: int, channels: int, filters: int) -> None:
    if groups < 1 or channels % groups or filters % groups:
        raise op_error(
            op,
            "groups",
            f"{groups} must divide the input channels ({channels}) "
            f"and the output channels ({filters})",
        )


def conv_nd(
    data: Tensor,
    weight: Tensor,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """The convolution of data (N, C, *S) with weight (O, C // groups, *K); `padding` lists
    every spatial start, then every end."""
    op = "conv_nd"
    rank = data.ndim - 2
    batch, channels, *sizes = expect_const_shape(op, "data", data, rank + 2)
    filters, per_group, *kernel = expect_const_shape(op, "weight", weight, rank + 2)
    _check_groups(op, groups, channels, filters)
    if per_group * groups != channels:
        raise op_error(op, "weight", f"has {per_group} channels per group, `data` {channels}")
    outs = [
        (size + padding[d] + padding[rank + d] - (kernel[d] - 1) * dilation[d] - 1) // strides[d]
        + 1
        for d, size in enumerate(sizes)
    ]
    dtype = out_dtype or data.dtype
    if any(padding):
        data = pad(data, (0, 0, *padding[:rank]), (0, 0, *padding[rank:]), name="conv_nd_pad")
    rc = te.reduce_axis((0, per_group), name="rc")
    rk = [te.reduce_axis((0, k), name=f"rk{d}") for d, k in enumerate(kernel)]
    filters_per_group = filters // groups

    def fconv(n: PrimExpr, o: PrimExpr, *out: PrimExpr) -> PrimExpr:
        taps = [out[d] * strides[d] + rk[d] * dilation[d] for d in range(rank)]
        channel = rc if groups == 1 else o // filters_per_group * per_group + rc
        value = data[(n, channel, *taps)].astype(dtype) * weight[(o, rc, *rk)].astype(dtype)
        return te.sum(value, axis=[rc, *rk])

    return te.compute((batch, filters, *outs), fconv, name="conv_nd", tag="conv_nd")


def conv_transpose_nd(
    data: Tensor,
    weight: Tensor,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int = 1,
    out_dtype: str | None = None,
) -> Tensor:
    """The transposed convolution of data (N, C, *S) with weight (C, O // groups, *K): input
    position i, tap k adds to output position i * stride + k * dilation - pad_begin; the output
    extent is (S - 1) * stride + (K - 1) * dilation + 1 + output_padding - pad_begin - pad_end."""
    op = "conv_transpose_nd"
    rank = data.ndim - 2
    batch, channels, *sizes = expect_const_shape(op, "data", data, rank + 2)
    in_channels, per_group, *kernel = expect_const_shape(op, "weight", weight, rank + 2)
    if in_channels != channels:
        raise op_error(op, "weight", f"has {in_channels} input channels, `data` {channels}")
    _check_groups(op, groups, channels, per_group * groups)
    outs = [
        (size - 1) * strides[d]
        + (kernel[d] - 1) * dilation[d]
        + 1
        + output_padding[d]
        - padding[d]
        - padding[rank + d]
        for d, size in enumerate(sizes)
    ]
    dtype = out_dtype or data.dtype
    spans = [(k - 1) * dl + 1 for k, dl in zip(kernel, dilation, strict=True)]
    # out[o] sums P[o + k * dilation] * weight[K - 1 - k] over the input dilated by the strides
    # and placed at offset span - 1 - pad_begin (negative: cropped) in a zero tensor P.
    shifts = [span - 1 - padding[d] for d, span in enumerate(spans)]
    extents = [o + span - 1 for o, span in zip(outs, spans, strict=True)]
    dilated = _dilate(data, strides, shifts, extents)
    channels_per_group = channels // groups
    rc = te.reduce_axis((0, channels_per_group), name="rc")
    rk = [te.reduce_axis((0, k), name=f"rk{d}") for d, k in enumerate(kernel)]

    def fconv(n: PrimExpr, o: PrimExpr, *out: PrimExpr) -> PrimExpr:
        taps = [out[d] + rk[d] * dilation[d] for d in range(rank)]
        flipped = [kernel[d] - 1 - rk[d] for d in range(rank)]
        channel = rc if groups == 1 else o // per_group * channels_per_group + rc
        value = dilated[(n, channel, *taps)].astype(dtype)
        filt = weight[(channel, o % per_group if groups > 1 else o, *flipped)].astype(dtype)
        return te.sum(value * filt, axis=[rc, *rk])

    shape = (batch, per_group * groups, *outs)
    if min(outs) < 1:
        raise op_error(op, "padding", f"leaves an empty output {list(outs)}")
    return te.compute(shape, fconv, name="conv_transpose_nd", tag="conv_transpose_nd")


def _dilate(
    data: Tensor, strides: Sequence[int], shifts: Sequence[int], extents: Sequence[int]
) -> Tensor:
    """`data` with stride - 1 zeros between neighbours along each spatial axis, placed at
    offset `shift` (negative: cropped) in a zero tensor of spatial `extents`."""
    sizes = [int(s) for s in data.shape[2:]]

    def fdilate(n: PrimExpr, c: PrimExpr, *position: PrimExpr) -> PrimExpr:
        conditions, indices = [], []
        for q, stride, shift, size, extent in zip(
            position, strides, shifts, sizes, extents, strict=True
        ):
            local = q - shift if shift > 0 else (q + (-shift) if shift < 0 else q)
            last = (size - 1) * stride  # the dilated input's last position
            conditions += [local >= 0] if shift > 0 else []
            conditions += [local <= last] if extent - 1 - shift > last else []
            if stride > 1:
                conditions.append(local % stride == 0)
                local = local // stride
            indices.append(local)
        value = data[(n, c, *indices)]
        guard = _guard(conditions)
        return value if guard is None else te.if_then_else(guard, value, te.const(0, data.dtype))

    shape = (*data.shape[:2], *extents)
    return te.compute(shape, fdilate, name="conv_transpose_dilate")


__all__ = ["conv_nd", "conv_transpose_nd"]
