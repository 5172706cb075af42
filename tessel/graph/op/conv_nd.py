"""Convolutions without a tuned 2-D compute: nn.conv3d and the transposed convolutions
nn.conv{1,2,3}d_transpose, in NC + spatial layout (NCW, NCHW, NCDHW), with groups and dilation.

`padding` lists every spatial start, then every end (ONNX's pads order)."""

from __future__ import annotations

import itertools

import numpy as np

from tessel import topi
from tessel.graph.op.common import as_dtype, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type


def _wide(dtype: np.dtype) -> type:
    """The dtype a reference accumulates in: float64 for floats, int64 for integers."""
    return np.float64 if np.issubdtype(dtype, np.floating) else np.int64


def _per_axis(args: Args, attrs: Attrs, name: str, rank: int, minimum: int) -> tuple[int, ...]:
    values = tuple(attrs[name])
    wanted = 2 * rank if name == "padding" else rank
    if len(values) != wanted or any(v < minimum for v in values):
        raise args.error(name, f"must be {wanted} integers >= {minimum}, got {list(values)}")
    return values


def _operands(args: Args, attrs: Attrs, rank: int) -> tuple[TensorType, TensorType]:
    data = args.tensor("data", ndim=rank + 2)
    weight = args.tensor("weight", ndim=rank + 2)
    args.same_dtype("weight", "data")
    for name, minimum in (("strides", 1), ("dilation", 1), ("padding", 0)):
        _per_axis(args, attrs, name, rank, minimum)
    if attrs.groups < 1 or data.shape[1] % attrs.groups:
        raise args.error("groups", f"{attrs.groups} must divide the {data.shape[1]} channels")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != weight.shape[2:]:
        raise args.error(
            "kernel_size", f"is {list(attrs.kernel_size)} but `weight` is {list(weight.shape[2:])}"
        )
    return data, weight


def _conv_rel(rank: int):
    def relation(args: Args, attrs: Attrs) -> Type:
        data, weight = _operands(args, attrs, rank)
        filters, per_group = weight.shape[:2]
        if per_group * attrs.groups != data.shape[1] or filters % attrs.groups:
            raise args.error(
                "weight",
                f"of shape {list(weight.shape)} does not fit "
                f"{data.shape[1]} channels in {attrs.groups} "
                "group(s)",
            )
        outs = []
        for d, size in enumerate(data.shape[2:]):
            span = (weight.shape[2 + d] - 1) * attrs.dilation[d] + 1
            padded = size + attrs.padding[d] + attrs.padding[rank + d]
            if padded < span:
                raise args.error("data", f"has padded extent {padded} below the kernel's {span}")
            outs.append((padded - span) // attrs.strides[d] + 1)
        return same_as(data, (data.shape[0], filters, *outs), attrs.out_dtype or None)

    return relation


def _transpose_extents(data: tuple[int, ...], weight: tuple[int, ...], attrs: Attrs) -> list[int]:
    rank = len(data) - 2
    return [
        (size - 1) * attrs.strides[d]
        + (weight[2 + d] - 1) * attrs.dilation[d]
        + 1
        + attrs.output_padding[d]
        - attrs.padding[d]
        - attrs.padding[rank + d]
        for d, size in enumerate(data[2:])
    ]


def _conv_transpose_rel(rank: int):
    def relation(args: Args, attrs: Attrs) -> Type:
        data, weight = _operands(args, attrs, rank)
        _per_axis(args, attrs, "output_padding", rank, 0)
        if weight.shape[0] != data.shape[1]:
            raise args.error(
                "weight", f"has {weight.shape[0]} input channels, `data` {data.shape[1]}"
            )
        outs = _transpose_extents(data.shape, weight.shape, attrs)
        if min(outs) < 1:
            raise args.error("padding", f"leaves an empty output {outs}")
        shape = (data.shape[0], weight.shape[1] * attrs.groups, *outs)
        return same_as(data, shape, attrs.out_dtype or None)

    return relation


def _conv_ref(data: np.ndarray, weight: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    rank, wide = data.ndim - 2, _wide(data.dtype)
    pads = [(0, 0), (0, 0)] + [(attrs.padding[d], attrs.padding[rank + d]) for d in range(rank)]
    padded = np.pad(data.astype(wide), pads)
    kernel, groups = weight.shape[2:], attrs.groups
    outs = [
        (padded.shape[2 + d] - (k - 1) * attrs.dilation[d] - 1) // attrs.strides[d] + 1
        for d, k in enumerate(kernel)
    ]
    per_group, filters = weight.shape[1], weight.shape[0] // groups
    out = np.zeros((data.shape[0], weight.shape[0], *outs), wide)
    for taps in itertools.product(*(range(k) for k in kernel)):
        window = padded[
            (
                slice(None),
                slice(None),
                *(
                    slice(
                        t * attrs.dilation[d],
                        t * attrs.dilation[d] + (outs[d] - 1) * attrs.strides[d] + 1,
                        attrs.strides[d],
                    )
                    for d, t in enumerate(taps)
                ),
            )
        ]
        for g in range(groups):
            w = weight[(slice(g * filters, (g + 1) * filters), slice(None), *taps)].astype(wide)
            x = window[:, g * per_group : (g + 1) * per_group]
            out[:, g * filters : (g + 1) * filters] += np.einsum("nc...,oc->no...", x, w)
    return as_dtype(out, attrs.out_dtype or str(data.dtype))


def _every(start: int, count: int, step: int) -> slice:
    """`count` positions from `start`, `step` apart."""
    return slice(start, start + (count - 1) * step + 1, step)


def _conv_transpose_ref(data: np.ndarray, weight: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    rank, wide = data.ndim - 2, _wide(data.dtype)
    outs = _transpose_extents(data.shape, weight.shape, attrs)
    groups, per_group = attrs.groups, weight.shape[1]
    channels = data.shape[1] // groups
    # Accumulate into the uncropped output, then cut the pads off (output_padding may overhang).
    full = [o + attrs.padding[d] + attrs.padding[rank + d] for d, o in enumerate(outs)]
    big = [
        f + (k - 1) * dl + 1
        for f, k, dl in zip(full, weight.shape[2:], attrs.dilation, strict=True)
    ]
    acc = np.zeros((data.shape[0], per_group * groups, *big), wide)
    for taps in itertools.product(*(range(k) for k in weight.shape[2:])):
        where = tuple(
            _every(t * attrs.dilation[d], data.shape[2 + d], attrs.strides[d])
            for d, t in enumerate(taps)
        )
        for g in range(groups):
            x = data[:, g * channels : (g + 1) * channels].astype(wide)
            w = weight[(slice(g * channels, (g + 1) * channels), slice(None), *taps)].astype(wide)
            part = np.einsum("nc...,co->no...", x, w)
            acc[(slice(None), slice(g * per_group, (g + 1) * per_group), *where)] += part
    crop = tuple(slice(attrs.padding[d], attrs.padding[d] + outs[d]) for d in range(rank))
    return as_dtype(acc[(slice(None), slice(None), *crop)], attrs.out_dtype or str(data.dtype))


def _attrs(rank: int, transpose: bool) -> tuple[Attr, ...]:
    common = (
        Attr("strides", "ints", (1,) * rank),
        Attr("padding", "ints", (0,) * (2 * rank)),
        Attr("dilation", "ints", (1,) * rank),
        Attr("groups", "int", 1),
        Attr("channels", "int", None, optional=True),
        Attr("kernel_size", "ints", None, optional=True),
        Attr("out_dtype", "dtype", ""),
    )
    return (*common, Attr("output_padding", "ints", (0,) * rank)) if transpose else common


def _conv_lower(data, weight, *, attrs: Attrs):
    return topi.nn.conv_nd(
        data,
        weight,
        attrs.strides,
        attrs.padding,
        attrs.dilation,
        attrs.groups,
        attrs.out_dtype or None,
    )


def _conv_transpose_lower(data, weight, *, attrs: Attrs):
    return topi.nn.conv_transpose_nd(
        data,
        weight,
        attrs.strides,
        attrs.padding,
        attrs.output_padding,
        attrs.dilation,
        attrs.groups,
        attrs.out_dtype or None,
    )


def _transpose_op(rank: int) -> OpDef:
    return OpDef(
        f"nn.conv{rank}d_transpose",
        ("data", "weight"),
        _attrs(rank, True),
        _conv_transpose_rel(rank),
        _conv_transpose_lower,
        _conv_transpose_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        f"{rank}-D transposed convolution; weight is (C, O // groups, *kernel).",
    )


OPERATORS = (
    OpDef(
        "nn.conv3d",
        ("data", "weight"),
        _attrs(3, False),
        _conv_rel(3),
        _conv_lower,
        _conv_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "3-D convolution (NCDHW / OIDHW, groups, dilation).",
    ),
    *(_transpose_op(rank) for rank in (1, 2, 3)),
)

__all__ = ["OPERATORS"]
