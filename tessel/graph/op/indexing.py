"""Operators that read at positions held in a tensor: take, gather, gather_nd, one_hot; and topk,
which selects by value."""

from __future__ import annotations

import numpy as np

from tessel import topi
from tessel.arith.dims import compare_dims, dim_text
from tessel.graph.op.common import as_dtype, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.support.dtype import DataType
from tessel.topi.sort import topk

_TAKE_MODES = ("clip", "wrap", "fast")


def _indices(args: Args, name: str = "indices") -> TensorType:
    ty = args.tensor(name)
    if not DataType.of(ty.dtype).is_integer:
        raise args.error(name, f"must be an integer tensor, got dtype {ty.dtype}")
    return ty


def _take_rel(args: Args, attrs: Attrs) -> Type:
    data, indices = args.tensor("data"), _indices(args)
    if attrs.mode not in _TAKE_MODES:
        raise args.error("mode", f"must be one of {list(_TAKE_MODES)}, got {attrs.mode!r}")
    if attrs.axis is None:
        if attrs.batch_dims != 0:
            raise args.error("batch_dims", "must be 0 when `axis` is None")
        return same_as(data, indices.shape)
    axis = args.axis("axis", attrs.axis, data.ndim)
    batch = attrs.batch_dims % indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if batch > axis or batch > indices.ndim:
        raise args.error("batch_dims", f"{attrs.batch_dims} exceeds the axis {axis}")
    if indices.shape[:batch] != data.shape[:batch]:
        raise args.error(
            "indices",
            f"has batch extents {list(indices.shape[:batch])} but `data` has "
            f"{list(data.shape[:batch])}",
        )
    if data.shape[axis] == 0 and attrs.mode != "fast":
        raise args.error("data", f"has extent 0 along axis {axis}; nothing can be taken")
    return same_as(data, (*data.shape[:axis], *indices.shape[batch:], *data.shape[axis + 1 :]))


def _in_range(index: np.ndarray, extent: int, mode: str) -> np.ndarray:
    """Indices into an axis of `extent`: negative from the end, then clamped or wrapped."""
    index = index.astype(np.int64)
    if mode == "wrap":
        return np.mod(index, extent)
    index = np.where(index < 0, index + extent, index)
    return np.clip(index, 0, extent - 1) if mode == "clip" else index


def _take_ref(data: np.ndarray, indices: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    if attrs.axis is None:
        return data.reshape(-1)[_in_range(indices, data.size, attrs.mode)]
    axis = attrs.axis % data.ndim
    batch = attrs.batch_dims % indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    positions = _in_range(indices, data.shape[axis], attrs.mode)
    if batch == 0:
        return np.take(data, positions, axis=axis)
    out_shape = (*data.shape[:axis], *indices.shape[batch:], *data.shape[axis + 1 :])
    out = np.empty(out_shape, data.dtype)
    for prefix in np.ndindex(*data.shape[:batch]):
        out[prefix] = np.take(data[prefix], positions[prefix], axis=axis - batch)
    return out


def _gather_rel(args: Args, attrs: Attrs) -> Type:
    data, indices = args.tensor("data"), _indices(args)
    if indices.ndim != data.ndim:
        raise args.error("indices", f"has rank {indices.ndim} but `data` has rank {data.ndim}")
    axis = args.axis("axis", attrs.axis, data.ndim)
    for d, (i, n) in enumerate(zip(indices.shape, data.shape, strict=True)):
        fits = True if d == axis else compare_dims("<=", i, n)
        if fits is False:
            raise args.error("indices", f"has extent {i} on axis {d} but `data` has only {n} there")
        if fits is None:
            raise args.error(
                "indices",
                f"has extent {dim_text(i)} on axis {d}, not proved within `data`'s {dim_text(n)}",
            )
    return same_as(data, indices.shape)


def _gather_ref(data: np.ndarray, indices: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    axis = attrs.axis % data.ndim
    window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    positions = _in_range(indices, data.shape[axis], "fast")
    return np.take_along_axis(data[window], positions, axis=axis)


def _gather_nd_rel(args: Args, attrs: Attrs) -> Type:
    data, indices = args.tensor("data"), _indices(args)
    if indices.ndim < 1:
        raise args.error("indices", "must have rank 1 or more (the index tuples lie along axis 0)")
    depth, batch = indices.shape[0], attrs.batch_dims
    if attrs.index_rank is not None and attrs.index_rank != depth:
        raise args.error("index_rank", f"is {attrs.index_rank} but indices hold {depth}-tuples")
    if not 0 <= batch < indices.ndim or batch + depth > data.ndim:
        raise args.error(
            "batch_dims", f"{batch} with {depth}-tuples does not fit data of rank {data.ndim}"
        )
    if indices.shape[1 : 1 + batch] != data.shape[:batch]:
        raise args.error(
            "indices",
            f"has batch extents {list(indices.shape[1 : 1 + batch])} but "
            f"`data` has {list(data.shape[:batch])}",
        )
    return same_as(data, (*indices.shape[1:], *data.shape[batch + depth :]))


def _gather_nd_ref(data: np.ndarray, indices: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    batch, depth = attrs.batch_dims, indices.shape[0]
    out = np.empty((*indices.shape[1:], *data.shape[batch + depth :]), data.dtype)
    for prefix in np.ndindex(*indices.shape[1:]):
        position = tuple(
            _in_range(indices[(m, *prefix)], data.shape[batch + m], "fast") for m in range(depth)
        )
        out[prefix] = data[(*prefix[:batch], *position)]
    return out


def _one_hot_rel(args: Args, attrs: Attrs) -> Type:
    indices = _indices(args)
    on, off = args.tensor("on_value", ndim=0), args.tensor("off_value", ndim=0)
    args.same_dtype("off_value", "on_value")
    if attrs.depth < 0:
        raise args.error("depth", f"must be non-negative, got {attrs.depth}")
    axis = args.axis("axis", attrs.axis, indices.ndim + 1)
    dtype = attrs.dtype or on.dtype
    del off
    return TensorType((*indices.shape[:axis], attrs.depth, *indices.shape[axis:]), dtype)


def _one_hot_ref(indices, on_value, off_value, *, attrs: Attrs) -> np.ndarray:
    dtype = attrs.dtype or str(on_value.dtype)
    hot = indices[..., None] == np.arange(attrs.depth)
    out = np.where(hot, on_value, off_value)
    return as_dtype(np.moveaxis(out, -1, attrs.axis % (indices.ndim + 1)), dtype)


def _topk_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    axis = args.axis("axis", attrs.axis, data.ndim)
    if not 0 <= attrs.k <= data.shape[axis]:
        raise args.error("k", f"{attrs.k} must lie in [0, {data.shape[axis]}] (axis {axis})")
    if DataType.of(data.dtype).is_bool:
        raise args.error("data", "cannot order bools")
    shape = (*data.shape[:axis], attrs.k, *data.shape[axis + 1 :])
    return TupleType((same_as(data, shape), TensorType(shape, attrs.dtype)))


def _order_keys(data: np.ndarray, largest: bool) -> np.ndarray:
    """Keys whose ascending stable order is the order of topk: each element's rank among the
    distinct values, negated for `largest` (which NumPy cannot do to unsigned values)."""
    _, dense = np.unique(data, return_inverse=True)
    dense = dense.reshape(data.shape).astype(np.int64)
    return -dense if largest else dense


def _topk_ref(data: np.ndarray, *, attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    axis = attrs.axis % data.ndim
    order = np.argsort(_order_keys(data, attrs.largest), axis=axis, kind="stable")
    order = np.take(order, np.arange(attrs.k), axis=axis)
    return np.take_along_axis(data, order, axis=axis), order.astype(attrs.dtype)


OPERATORS = (
    OpDef(
        "take",
        ("data", "indices"),
        (
            Attr("axis", "int", None, optional=True),
            Attr("batch_dims", "int", 0),
            Attr("mode", "str", "clip"),
        ),
        _take_rel,
        lambda x, i, *, attrs: topi.take(x, i, attrs.axis, attrs.batch_dims, attrs.mode),
        _take_ref,
        OpPattern.INJECTIVE,
        "Elements of data at indices along `axis` (None: of data flattened).",
    ),
    OpDef(
        "gather",
        ("data", "indices"),
        (Attr("axis", "int", 0),),
        _gather_rel,
        lambda x, i, *, attrs: topi.gather(x, attrs.axis, i),
        _gather_ref,
        OpPattern.INJECTIVE,
        "out[i] = data[i with `axis` replaced by indices[i]] (ONNX GatherElements).",
    ),
    OpDef(
        "gather_nd",
        ("data", "indices"),
        (Attr("batch_dims", "int", 0), Attr("index_rank", "int", None, optional=True)),
        _gather_nd_rel,
        lambda x, i, *, attrs: topi.gather_nd(x, i, attrs.batch_dims),
        _gather_nd_ref,
        OpPattern.INJECTIVE,
        "Slices of data at the index tuples along axis 0 of indices (TVM's layout).",
    ),
    OpDef(
        "one_hot",
        ("indices", "on_value", "off_value"),
        (Attr("depth", "int"), Attr("axis", "int", -1), Attr("dtype", "dtype", "")),
        _one_hot_rel,
        lambda i, on, off, *, attrs: topi.one_hot(
            i, on(), off(), attrs.depth, attrs.axis, attrs.dtype or on.dtype
        ),
        _one_hot_ref,
        OpPattern.INJECTIVE,
        "A new axis of extent `depth` holding on_value at each index, off_value elsewhere.",
    ),
    OpDef(
        "topk",
        ("data",),
        (
            Attr("k", "int"),
            Attr("axis", "int", -1),
            Attr("largest", "bool", True),
            Attr("dtype", "dtype", "int64"),
        ),
        _topk_rel,
        lambda x, *, attrs: topk(x, attrs.k, attrs.axis, attrs.largest, attrs.dtype),
        _topk_ref,
        OpPattern.OPAQUE,
        "(values, indices) of the k largest (smallest) elements along `axis`, in order; the "
        "lower index first among equal ones.",
    ),
)

__all__ = ["OPERATORS"]
