"""Products and convolutions: nn.conv2d, nn.dense, nn.matmul, nn.batch_matmul, nn.bias_add,
nn.batch_flatten; nn.conv3d and the transposed convolutions come from conv_nd.py."""

from __future__ import annotations

import numpy as np

from tessel import te, topi
from tessel.arith.dims import dim_product, dims_equal
from tessel.graph.op import conv_nd
from tessel.graph.op.common import as_dtype, same_as, te_shape
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.op.window import conv_extent, four, pair, reference_windows, sides, two
from tessel.graph.ty import TensorType, Type

_CONV_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _wide(dtype: np.dtype) -> type:
    """The dtype a reference accumulates in: float64 for floats, int64 for integers."""
    return np.float64 if np.issubdtype(dtype, np.floating) else np.int64


def _out_dtype(args: Args, attrs: Attrs, data: TensorType) -> str:
    return attrs.out_dtype or data.dtype


# --- nn.conv2d ---------------------------------------------------------------------------------


def _conv_operands(args: Args, attrs: Attrs) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(N, C, H, W) and (O, I, KH, KW) whatever the layouts."""
    if attrs.data_layout not in _CONV_LAYOUTS:
        raise args.error("data_layout", f"must be 'NCHW' or 'NHWC', got {attrs.data_layout!r}")
    if attrs.kernel_layout != _CONV_LAYOUTS[attrs.data_layout]:
        raise args.error(
            "kernel_layout",
            f"must be {_CONV_LAYOUTS[attrs.data_layout]!r} with data_layout "
            f"{attrs.data_layout!r}, got {attrs.kernel_layout!r}",
        )
    data, weight = args.tensor("data", ndim=4), args.tensor("weight", ndim=4)
    args.same_dtype("weight", "data")
    if attrs.data_layout == "NCHW":
        return data.shape, weight.shape
    (n, h, w, c), (kh, kw, i, o) = data.shape, weight.shape
    return (n, c, h, w), (o, i, kh, kw)


def _conv2d_rel(args: Args, attrs: Attrs) -> Type:
    (n, c, h, w), (o, i, kh, kw) = _conv_operands(args, attrs)
    groups = attrs.groups
    if groups < 1 or c % groups or o % groups:
        raise args.error(
            "groups", f"{groups} must divide the input channels ({c}) and the output channels ({o})"
        )
    if i * groups != c:
        raise args.error(
            "weight",
            f"has {i} input channels per group but `data` has {c} channels in {groups} group(s)",
        )
    if attrs.channels is not None and attrs.channels != o:
        raise args.error("channels", f"is {attrs.channels} but `weight` has {o} output channels")
    oh, ow = conv_output_extents(args, attrs, (h, w), (kh, kw))
    shape = (n, o, oh, ow) if attrs.data_layout == "NCHW" else (n, oh, ow, o)
    data = args.tensor("data")
    return same_as(data, shape, _out_dtype(args, attrs, data))


def conv_output_extents(
    args: Args, attrs: Attrs, size: tuple[int, int], kernel: tuple[int, int]
) -> tuple[int, int]:
    """(OH, OW) of a 2-D convolution of `size` with `kernel` under the call's strides, dilation
    and padding, `kernel_size` checked against the kernel."""
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != kernel:
        raise args.error(
            "kernel_size", f"is {list(attrs.kernel_size)} but `weight` is {kernel[0]}x{kernel[1]}"
        )
    sh, sw = pair(args, "strides", attrs.strides)
    dh, dw = pair(args, "dilation", attrs.dilation)
    top, left, bottom, right = sides(args, "padding", attrs.padding)
    return (
        conv_extent(args, size[0], kernel[0], top + bottom, sh, dh),
        conv_extent(args, size[1], kernel[1], left + right, sw, dw),
    )


def _conv2d_lower(data: te.Tensor, weight: te.Tensor, *, attrs: Attrs) -> te.Tensor:
    out_dtype = attrs.out_dtype or data.dtype
    window = (two(attrs.strides), four(attrs.padding), two(attrs.dilation))
    if attrs.groups == 1:
        if attrs.data_layout == "NCHW":
            return topi.nn.conv2d_nchw(data, weight, *window, out_dtype=out_dtype)
        return topi.nn.conv2d_nhwc(data, weight, *window, out_dtype=out_dtype)
    if attrs.data_layout == "NCHW":
        return topi.nn.group_conv2d_nchw(data, weight, *window, attrs.groups, out_dtype)
    # TOPI has no grouped NHWC convolution: go through NCHW / OIHW and back.
    nchw = topi.transpose(data, (0, 3, 1, 2))
    oihw = topi.transpose(weight, (3, 2, 0, 1))
    out = topi.nn.group_conv2d_nchw(nchw, oihw, *window, attrs.groups, out_dtype)
    return topi.transpose(out, (0, 2, 3, 1))


def _conv2d_ref(data: np.ndarray, weight: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    out_dtype = attrs.out_dtype or str(data.dtype)
    if attrs.data_layout == "NHWC":
        data, weight = data.transpose(0, 3, 1, 2), weight.transpose(3, 2, 0, 1)
    wide = _wide(data.dtype)
    kernel = weight.shape[2:]
    windows = reference_windows(
        data.astype(wide), kernel, attrs.strides, attrs.dilation, four(attrs.padding), 0
    )  # (N, C, OH, OW, KH, KW)
    groups, per_group = attrs.groups, weight.shape[1]
    filters = weight.shape[0] // groups
    parts = [
        np.einsum(
            "ncyxhw,ochw->noyx",
            windows[:, g * per_group : (g + 1) * per_group],
            weight[g * filters : (g + 1) * filters].astype(wide),
        )
        for g in range(groups)
    ]
    out = np.concatenate(parts, axis=1)
    if attrs.data_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return as_dtype(out, out_dtype)


_CONV_ATTRS = (
    Attr("strides", "ints", (1, 1)),
    Attr("padding", "ints", (0, 0)),
    Attr("dilation", "ints", (1, 1)),
    Attr("groups", "int", 1),
    Attr("channels", "int", None, optional=True),
    Attr("kernel_size", "ints", None, optional=True),
    Attr("data_layout", "str", "NCHW"),
    Attr("kernel_layout", "str", "OIHW"),
    Attr("out_layout", "str", ""),
    Attr("out_dtype", "dtype", ""),
)


# --- nn.dense, nn.matmul -----------------------------------------------------------------------


def _dense_rel(args: Args, attrs: Attrs) -> Type:
    data, weight = args.tensor("data"), args.tensor("weight", ndim=2)
    args.same_dtype("weight", "data")
    if data.ndim < 1:
        raise args.error("data", "must have rank at least 1, got a scalar")
    units, features = weight.shape
    if not dims_equal(features, data.shape[-1]):
        raise args.error("weight", f"has {features} input features but `data` has {data.shape[-1]}")
    if attrs.units is not None and attrs.units != units:
        raise args.error("units", f"is {attrs.units} but `weight` has {units} rows")
    return same_as(data, (*data.shape[:-1], units), _out_dtype(args, attrs, data))


def _flat_rows(data: te.Tensor) -> te.Tensor:
    """An N-D tensor as a matrix of its last axis (2-D tensors unchanged)."""
    if data.ndim == 2:
        return data
    shape = te_shape(data)
    return topi.reshape(data, (dim_product(shape[:-1]), shape[-1]))


def _unflat_rows(out: te.Tensor, data: te.Tensor) -> te.Tensor:
    if data.ndim == 2:
        return out
    return topi.reshape(out, (*te_shape(data)[:-1], te_shape(out)[-1]))


def _dense_lower(data: te.Tensor, weight: te.Tensor, *, attrs: Attrs) -> te.Tensor:
    out = topi.nn.dense(_flat_rows(data), weight, out_dtype=attrs.out_dtype or None)
    return _unflat_rows(out, data)


def _dense_ref(data: np.ndarray, weight: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    wide = _wide(data.dtype)
    out = data.astype(wide) @ weight.astype(wide).T
    return as_dtype(out, attrs.out_dtype or str(data.dtype))


def _matmul_rel(args: Args, attrs: Attrs) -> Type:
    a = args.tensor("tensor_a", ndim=(2,) if attrs.transpose_a else (1, 2, 3, 4, 5, 6))
    b = args.tensor("tensor_b", ndim=2)
    args.same_dtype("tensor_b", "tensor_a")
    k_a = a.shape[-2] if attrs.transpose_a else a.shape[-1]
    k_b, n = (b.shape[1], b.shape[0]) if attrs.transpose_b else b.shape
    if not dims_equal(k_a, k_b):
        raise args.error("tensor_b", f"reduces over {k_b} elements but `tensor_a` has {k_a}")
    if attrs.units is not None and attrs.units != n:
        raise args.error("units", f"is {attrs.units} but `tensor_b` gives {n} columns")
    rows = (a.shape[-1],) if attrs.transpose_a else a.shape[:-1]
    return same_as(a, (*rows, n), _out_dtype(args, attrs, a))


def _matmul_lower(a: te.Tensor, b: te.Tensor, *, attrs: Attrs) -> te.Tensor:
    flat = a if attrs.transpose_a else _flat_rows(a)
    out = topi.nn.matmul(
        flat,
        b,
        out_dtype=attrs.out_dtype or None,
        transpose_a=attrs.transpose_a,
        transpose_b=attrs.transpose_b,
    )
    return out if attrs.transpose_a else _unflat_rows(out, a)


def _matmul_ref(a: np.ndarray, b: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    wide = _wide(a.dtype)
    lhs = a.T if attrs.transpose_a else a
    rhs = b.T if attrs.transpose_b else b
    return as_dtype(lhs.astype(wide) @ rhs.astype(wide), attrs.out_dtype or str(a.dtype))


def _batch_matmul_rel(args: Args, attrs: Attrs) -> Type:
    a, b = args.tensor("tensor_a", ndim=3), args.tensor("tensor_b", ndim=3)
    args.same_dtype("tensor_b", "tensor_a")
    m, k_a = (a.shape[2], a.shape[1]) if attrs.transpose_a else a.shape[1:]
    n, k_b = b.shape[1:] if attrs.transpose_b else (b.shape[2], b.shape[1])
    if not dims_equal(k_a, k_b):
        raise args.error("tensor_b", f"reduces over {k_b} elements but `tensor_a` has {k_a}")
    if not dims_equal(a.shape[0], b.shape[0]) and 1 not in (a.shape[0], b.shape[0]):
        raise args.error(
            "tensor_b", f"has batch {b.shape[0]} but `tensor_a` has {a.shape[0]} (and neither is 1)"
        )
    batch = b.shape[0] if a.shape[0] == 1 else a.shape[0]
    return same_as(a, (batch, m, n), _out_dtype(args, attrs, a))


def _batch_matmul_ref(a: np.ndarray, b: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    wide = _wide(a.dtype)
    lhs = a.transpose(0, 2, 1) if attrs.transpose_a else a
    rhs = b.transpose(0, 2, 1) if attrs.transpose_b else b
    return as_dtype(lhs.astype(wide) @ rhs.astype(wide), attrs.out_dtype or str(a.dtype))


_MATMUL_ATTRS = (
    Attr("units", "int", None, optional=True),
    Attr("out_dtype", "dtype", ""),
    Attr("transpose_a", "bool", False),
    Attr("transpose_b", "bool", False),
)


# --- nn.bias_add, nn.batch_flatten -------------------------------------------------------------


def _bias_add_rel(args: Args, attrs: Attrs) -> Type:
    data, bias = args.tensor("data"), args.tensor("bias", ndim=1)
    args.same_dtype("bias", "data")
    axis = args.axis("axis", attrs.axis, data.ndim)
    if not dims_equal(bias.shape[0], data.shape[axis]):
        raise args.error(
            "bias", f"has {bias.shape[0]} values but axis {axis} of `data` has {data.shape[axis]}"
        )
    return data


def _bias_add_lower(data: te.Tensor, bias: te.Tensor, *, attrs: Attrs) -> te.Tensor:
    trailing = data.ndim - 1 - attrs.axis % data.ndim
    if trailing:
        bias = topi.expand_dims(bias, 1, num_newaxis=trailing)
    return topi.add(data, bias)


def _bias_add_ref(data: np.ndarray, bias: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    axis = attrs.axis % data.ndim
    return (data + bias.reshape([-1 if d == axis else 1 for d in range(data.ndim)])).astype(
        data.dtype
    )


def _batch_flatten_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if data.ndim < 1:
        raise args.error("data", "must have rank at least 1, got a scalar")
    return same_as(data, (data.shape[0], dim_product(data.shape[1:])))


OPERATORS = (
    OpDef(
        "nn.conv2d",
        ("data", "weight"),
        _CONV_ATTRS,
        _conv2d_rel,
        _conv2d_lower,
        _conv2d_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "2-D convolution (NCHW/OIHW or NHWC/HWIO, groups).",
    ),
    OpDef(
        "nn.dense",
        ("data", "weight"),
        (Attr("units", "int", None, optional=True), Attr("out_dtype", "dtype", "")),
        _dense_rel,
        _dense_lower,
        _dense_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "data @ weight.T; data is (..., in), weight (units, in).",
    ),
    OpDef(
        "nn.matmul",
        ("tensor_a", "tensor_b"),
        _MATMUL_ATTRS,
        _matmul_rel,
        _matmul_lower,
        _matmul_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "op(a) @ op(b), op transposing when asked.",
    ),
    OpDef(
        "nn.batch_matmul",
        ("tensor_a", "tensor_b"),
        (
            Attr("out_dtype", "dtype", ""),
            Attr("transpose_a", "bool", False),
            Attr("transpose_b", "bool", True),
        ),
        _batch_matmul_rel,
        lambda a, b, *, attrs: topi.nn.batch_matmul(
            a,
            b,
            out_dtype=attrs.out_dtype or None,
            transpose_a=attrs.transpose_a,
            transpose_b=attrs.transpose_b,
        ),
        _batch_matmul_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "Batched op(a) @ op(b) of 3-D tensors; a batch of 1 broadcasts.",
    ),
    OpDef(
        "nn.bias_add",
        ("data", "bias"),
        (Attr("axis", "int", 1),),
        _bias_add_rel,
        _bias_add_lower,
        _bias_add_ref,
        OpPattern.BROADCAST,
        "data + bias along `axis`.",
    ),
    OpDef(
        "nn.batch_flatten",
        ("data",),
        (),
        _batch_flatten_rel,
        lambda x, *, attrs: topi.nn.flatten(x),
        lambda x, *, attrs: x.reshape(x.shape[0], -1) if x.ndim else x.reshape(-1),
        OpPattern.INJECTIVE,
        "(N, d1, d2, ...) as (N, d1 * d2 * ...).",
    ),
    *conv_nd.OPERATORS,
)

__all__ = ["OPERATORS"]
