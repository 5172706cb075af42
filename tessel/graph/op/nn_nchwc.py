"""Channel-blocked operators, what AlterOpLayout rewrites NCHW convolutions into (Relay's names):
layout_transform, nn.contrib_conv2d_NCHWc and nn.contrib_depthwise_conv2d_NCHWc.

Data is NCHW[x]c (N, C // x, H, W, x); a conv2d kernel is OIHW[i]i[o]o (O // o, I // i, KH,
KW, i, o), I the input channels of a group (all of them for `groups` 1; a block of output
channels must then lie in one group), a depthwise one OIHW1i[o]o (O // o, 1, KH, KW, 1, o)."""

from __future__ import annotations

import numpy as np

from tessel import topi
from tessel.graph.op.common import same_as
from tessel.graph.op.nn import _CONV_ATTRS, _conv2d_ref, conv_output_extents
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.op.window import four, two
from tessel.graph.ty import Type
from tessel.support.errors import UserError
from tessel.topi.layout import layout, transform_array

# --- layout_transform --------------------------------------------------------------------------


def _layout_transform_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    try:
        src, dst = layout(attrs.src_layout), layout(attrs.dst_layout)
    except UserError as err:
        raise args.error("src_layout", str(err)) from err
    if sorted(src.primal) != sorted(dst.primal):
        raise args.error("dst_layout", f"{dst.name} does not have the axes of {src.name}")
    if data.ndim != len(src.axes):
        raise args.error("data", f"has rank {data.ndim}, but {src.name} has {len(src.axes)} axes")
    if any(f and data.shape[k] != f for k, (_, f) in enumerate(src.axes)):
        raise args.error("data", f"has shape {list(data.shape)}, whose blocks are not {src.name}'s")
    primal = dict(zip(src.primal, src.primal_shape(data.shape), strict=True))
    try:
        shape = dst.shape([primal[a] for a in dst.primal], what="data")
    except UserError as err:
        raise args.error("dst_layout", str(err)) from err
    return same_as(data, shape)


# --- nn.contrib_conv2d_NCHWc, nn.contrib_depthwise_conv2d_NCHWc --------------------------------


def _block(args: Args, name: str, value: str, primal: str, sub: str) -> int:
    """The block of `sub[0]` in layout attribute `name`, which must be `primal` followed by the
    sub-axes `sub` in order ("NCHW16c", "OIHW8i16o"; a block of 1 is written "1c")."""
    try:
        parsed = layout(value)
    except UserError as err:
        raise args.error(name, str(err)) from err
    if not parsed.is_blocked(primal, sub):
        example = primal + "".join(f"4{s}" for s in sub)
        raise args.error(
            name, f"must be {primal} then the sub-axes {list(sub)}, as {example!r}, got {value!r}"
        )
    return parsed.factor(sub[0].upper())


def _nchwc_conv_rel(args: Args, attrs: Attrs, depthwise: bool) -> Type:
    data, weight = args.tensor("data", ndim=5), args.tensor("weight", ndim=6)
    args.same_dtype("weight", "data")
    n, c_chunks, h, w, ic_bn = data.shape
    o_chunks, w_chunks, kh, kw, w_ic_bn, oc_bn = weight.shape
    if _block(args, "data_layout", attrs.data_layout, "NCHW", "c") != ic_bn:
        raise args.error("data_layout", f"{attrs.data_layout!r} does not block by {ic_bn}")
    if _block(args, "out_layout", attrs.out_layout, "NCHW", "c") != oc_bn:
        raise args.error("out_layout", f"{attrs.out_layout!r} does not block by {oc_bn}")
    _block(args, "kernel_layout", attrs.kernel_layout, "OIHW", "io")
    kernel = layout(attrs.kernel_layout)
    if (kernel.factor("I"), kernel.factor("O")) != (w_ic_bn, oc_bn):
        raise args.error(
            "kernel_layout", f"{attrs.kernel_layout!r} does not block `weight` {list(weight.shape)}"
        )
    channels, filters = c_chunks * ic_bn, o_chunks * oc_bn
    _check_channels(args, attrs, depthwise, (channels, ic_bn), (filters, oc_bn), weight.shape)
    if attrs.channels is not None and attrs.channels != filters:
        raise args.error("channels", f"is {attrs.channels} but `weight` has {filters} filters")
    oh, ow = conv_output_extents(args, attrs, (h, w), (kh, kw))
    return same_as(data, (n, o_chunks, oh, ow, oc_bn), attrs.out_dtype or data.dtype)


def _check_channels(
    args: Args,
    attrs: Attrs,
    depthwise: bool,
    data: tuple[int, int],
    out: tuple[int, int],
    weight: tuple[int, ...],
) -> None:
    """The weight's input channels against the data's (`data`: channels, block) in the
    convolution's groups, and the output block inside a group (`out`: filters, block)."""
    (channels, ic_bn), (filters, oc_bn) = data, out
    w_chunks, w_ic_bn = weight[1], weight[4]
    groups, per_group = attrs.groups, w_chunks * w_ic_bn
    if depthwise:
        if (w_chunks, w_ic_bn) != (1, 1) or filters % channels or groups != channels:
            raise args.error(
                "weight",
                f"must be (O // {oc_bn}, 1, KH, KW, 1, {oc_bn}) with groups "
                f"= {channels} channels, got {list(weight)} and groups {groups}",
            )
    elif groups == 1 and (w_chunks, w_ic_bn) != (channels // ic_bn, ic_bn):
        raise args.error(
            "weight",
            f"reads {w_chunks} x {w_ic_bn} input channels, but `data` has "
            f"{channels // ic_bn} x {ic_bn}",
        )
    elif groups < 1 or per_group * groups != channels or filters % groups:
        raise args.error(
            "weight",
            f"reads {w_chunks} x {w_ic_bn} input channels a group in {groups} groups, but "
            f"`data` has {channels} channels and the weight {filters} filters",
        )
    elif (filters // groups) % oc_bn:
        raise args.error(
            "out_layout",
            f"blocks by {oc_bn}, which does not divide a group's {filters // groups} output "
            "channels",
        )


def _nchwc_conv_ref(data: np.ndarray, weight: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    nchw = transform_array(data, attrs.data_layout, "NCHW")
    oihw = transform_array(weight, attrs.kernel_layout, "OIHW")
    flat = Attrs({**attrs, "data_layout": "NCHW", "kernel_layout": "OIHW"})
    return transform_array(_conv2d_ref(nchw, oihw, attrs=flat), "NCHW", attrs.out_layout)


# nn.conv2d's attributes, the three layouts required (they name the blocks).
_NCHWC_ATTRS = (
    *(a for a in _CONV_ATTRS if not a.name.endswith("layout")),
    Attr("data_layout", "str"),
    Attr("kernel_layout", "str"),
    Attr("out_layout", "str"),
)


def _nchwc_conv(name: str, depthwise: bool, doc: str) -> OpDef:
    """The OpDef of a blocked conv: conv2d_NCHWc or, `depthwise`, depthwise_conv2d_NCHWc."""
    compute = topi.nn.depthwise_conv2d_NCHWc if depthwise else topi.nn.conv2d_NCHWc

    def lower(data, weight, *, attrs: Attrs):
        window = (two(attrs.strides), four(attrs.padding), two(attrs.dilation))
        if not depthwise and attrs.groups != 1:
            return topi.nn.group_conv2d_NCHWc(
                data,
                weight,
                *window,
                attrs.groups,
                attrs.data_layout,
                attrs.out_layout,
                attrs.out_dtype or data.dtype,
            )
        return compute(
            data,
            weight,
            *window,
            attrs.data_layout,
            attrs.out_layout,
            attrs.out_dtype or data.dtype,
        )

    return OpDef(
        name,
        ("data", "weight"),
        _NCHWC_ATTRS,
        lambda args, attrs: _nchwc_conv_rel(args, attrs, depthwise),
        lower,
        _nchwc_conv_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        doc,
    )


OPERATORS = (
    OpDef(
        "layout_transform",
        ("data",),
        (Attr("src_layout", "str"), Attr("dst_layout", "str")),
        _layout_transform_rel,
        lambda x, *, attrs: topi.layout_transform(x, attrs.src_layout, attrs.dst_layout),
        lambda x, *, attrs: transform_array(x, attrs.src_layout, attrs.dst_layout),
        OpPattern.INJECTIVE,
        "data in src_layout rewritten in dst_layout (NCHW to NCHW16c and back).",
    ),
    _nchwc_conv("nn.contrib_conv2d_NCHWc", False,
                "2-D convolution (grouped or not) of NCHW[x]c data with an OIHW[i]i[o]o "
                "kernel into NCHW[o]c."),
    _nchwc_conv("nn.contrib_depthwise_conv2d_NCHWc", True,
                "Depthwise 2-D convolution of NCHW[x]c data with an OIHW1i[o]o kernel into "
                "NCHW[o]c."),
)  # fmt: skip

__all__ = ["OPERATORS"]
