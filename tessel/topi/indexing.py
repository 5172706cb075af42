"""Operators that read a tensor at positions held in another (TVM's tvm.topi take, gather,
gather_nd, one_hot), as te computes.

An index read from a tensor is brought into range in its own dtype (at least 32 bits, so that
adding the extent cannot overflow) and then cast to int32, the dtype of the axes it addresses.
"""

from __future__ import annotations

from typing import Any

from tessel.arith.dims import compare_dims, dims_equal, is_static, normalize_dim
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.te.operation import compute
from tessel.te.tensor import Tensor
from tessel.topi.transform import INJECTIVE, numel, unravel
from tessel.topi.utils import const_like, expect_tensor, normalize_axis, op_error

TAKE_MODES = ("clip", "wrap", "fast")


def expect_indices(op: str, indices: Any) -> Tensor:
    indices = expect_tensor(op, "indices", indices)
    if not DataType.of(indices.dtype).is_integer:
        raise op_error(op, "indices", f"expected an integer tensor, got {indices.dtype}")
    return indices


def in_range(index: PrimExpr, extent: Any, mode: str = "fast") -> PrimExpr:
    """`index` into an axis of `extent` as a position of the axis' type (int32; a symbolic
    extent's, int64): negative indices count from the end (as NumPy and ONNX do); then "clip"
    clamps to the axis, "wrap" wraps around it, and "fast" trusts the index to lie in
    [-extent, extent)."""
    position = "int32" if isinstance(extent, int) else extent.dtype
    if index.dtype.bits < DataType.of(position).bits:
        index = builders.cast(index, position)
    n = (
        builders.const(extent, index.dtype)
        if isinstance(extent, int)
        else builders.cast(extent, index.dtype)
    )
    if mode == "wrap":
        return builders.cast(builders.floormod(index, n), position)
    index = builders.select(index < 0, index + n, index)
    if mode == "clip":
        index = builders.max_value(builders.min_value(index, n - 1), 0)
    return builders.cast(index, position)


def take(
    a: Tensor, indices: Tensor, axis: int | None = None, batch_dims: int = 0, mode: str = "clip"
) -> Tensor:
    """Elements of `a` at `indices` along `axis` (None: of `a` flattened), as numpy.take; the
    first `batch_dims` axes of `indices` run alongside the same axes of `a`."""
    expect_tensor("take", "a", a)
    indices = expect_indices("take", indices)
    if mode not in TAKE_MODES:
        raise op_error("take", "mode", f"expected one of {TAKE_MODES}, got {mode!r}")
    shape = tuple(normalize_dim(e) for e in a.shape)  # symbolic extents taken along
    if axis is None:
        if not is_static(shape):
            raise op_error("take", "a", f"flattening takes a constant shape, got {list(shape)}")
        return _take_flat(a, indices, shape, batch_dims, mode)
    axis = normalize_axis("take", axis, a.ndim)
    batch_dims = _batch_dims(indices, shape, axis, batch_dims)
    _check_extent(shape[axis], mode)
    picked = indices.ndim - batch_dims  # output axes that walk the indices

    def read(*i: PrimExpr) -> PrimExpr:
        index = indices[i[:batch_dims] + i[axis : axis + picked]]
        return a[i[:axis] + (in_range(index, shape[axis], mode),) + i[axis + picked :]]

    out_shape = [*shape[:axis], *indices.shape[batch_dims:], *shape[axis + 1 :]]
    return compute(out_shape, read, name="T_take", tag=INJECTIVE)


def _take_flat(
    a: Tensor, indices: Tensor, shape: tuple[int, ...], batch_dims: int, mode: str
) -> Tensor:
    if batch_dims != 0:
        raise op_error("take", "batch_dims", f"must be 0 when axis is None, got {batch_dims}")
    _check_extent(numel(shape), mode)

    def read(*i: PrimExpr) -> PrimExpr:
        return a[tuple(unravel(in_range(indices[i], numel(shape), mode), shape))]

    return compute(indices.shape, read, name="T_take", tag=INJECTIVE)


def _batch_dims(indices: Tensor, shape: tuple[int, ...], axis: int, batch_dims: int) -> int:
    """`batch_dims` in [0, axis], checked against the leading extents of both tensors."""
    if not isinstance(batch_dims, int) or not -indices.ndim <= batch_dims <= indices.ndim:
        raise op_error(
            "take",
            "batch_dims",
            f"{batch_dims!r} is out of range for indices of rank {indices.ndim}",
        )
    batch_dims = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    if batch_dims > axis:
        raise op_error("take", "batch_dims", f"{batch_dims} exceeds the axis {axis}")
    leading = [normalize_dim(e) for e in indices.shape[:batch_dims]]
    if not all(dims_equal(x, y) for x, y in zip(leading, shape[:batch_dims], strict=True)):
        raise op_error(
            "take",
            "indices",
            f"its leading batch extents {list(leading)} differ from "
            f"those of `a` ({list(shape[:batch_dims])})",
        )
    return batch_dims


def _check_extent(extent: Any, mode: str) -> None:
    if isinstance(extent, int) and extent == 0 and mode != "fast":
        raise op_error("take", "a", "cannot take from an axis of extent 0")


def gather(data: Tensor, axis: int, indices: Tensor) -> Tensor:
    """ONNX GatherElements: `out[i] = data[i with axis replaced by indices[i]]`; `indices` has
    the rank of `data`, and negative indices count from the end."""
    expect_tensor("gather", "data", data)
    indices = expect_indices("gather", indices)
    shape = tuple(normalize_dim(e) for e in data.shape)
    if indices.ndim != data.ndim:
        raise op_error(
            "gather", "indices", f"has rank {indices.ndim} but `data` has rank {data.ndim}"
        )
    axis = normalize_axis("gather", axis, data.ndim)
    index_shape = tuple(normalize_dim(e) for e in indices.shape)
    # Symbolic extents: each index extent proved within the data's.
    wide = [
        d
        for d in range(data.ndim)
        if d != axis and compare_dims("<=", index_shape[d], shape[d]) is not True
    ]
    if wide:
        raise op_error(
            "gather",
            "indices",
            f"its shape {list(index_shape)} exceeds the shape "
            f"{list(shape)} of `data` at axis {wide[0]}",
        )

    def read(*i: PrimExpr) -> PrimExpr:
        return data[i[:axis] + (in_range(indices[i], shape[axis]),) + i[axis + 1 :]]

    return compute(index_shape, read, name="T_gather", tag=INJECTIVE)


gather_elements = gather  # ONNX's name for the same operator


def gather_nd(data: Tensor, indices: Tensor, batch_dims: int = 0) -> Tensor:
    """Slices of `data` at index tuples stored along the first axis of `indices` (TVM's layout:
    indices (M, B..., Y...) for data (B..., X...); out (B..., Y..., X[M:]...)); the first
    `batch_dims` axes run alongside, and negative indices count from the end."""
    expect_tensor("gather_nd", "data", data)
    indices = expect_indices("gather_nd", indices)
    shape = tuple(normalize_dim(e) for e in data.shape)  # symbolic extents taken along
    index_shape = tuple(normalize_dim(e) for e in indices.shape)
    if indices.ndim < 1 or not 0 <= batch_dims < indices.ndim:
        raise op_error(
            "gather_nd",
            "batch_dims",
            f"{batch_dims} is out of range for indices of shape {list(index_shape)}",
        )
    depth = index_shape[0]
    if not isinstance(depth, int):
        raise op_error("gather_nd", "indices", f"expected a constant index depth, got {depth}")
    if batch_dims + depth > data.ndim or not all(
        dims_equal(x, y)
        for x, y in zip(index_shape[1 : 1 + batch_dims], shape[:batch_dims], strict=True)
    ):
        raise op_error(
            "gather_nd",
            "indices",
            f"shape {list(index_shape)} does not index data "
            f"of shape {list(shape)} with batch_dims={batch_dims}",
        )
    walked = indices.ndim - 1  # output axes that walk the index tuples (batch axes included)

    def read(*i: PrimExpr) -> PrimExpr:
        tuple_at = i[:walked]
        position = tuple(
            in_range(indices[(m, *tuple_at)], shape[batch_dims + m]) for m in range(depth)
        )
        return data[i[:batch_dims] + position + i[walked:]]

    out_shape = [*index_shape[1:], *shape[batch_dims + depth :]]
    return compute(out_shape, read, name="T_gather_nd", tag=INJECTIVE)


def one_hot(
    indices: Tensor, on_value: Any, off_value: Any, depth: int, axis: int, dtype: str
) -> Tensor:
    """A tensor with a new axis of extent `depth` at `axis` (-1: last) that holds `on_value` at
    each position `indices` names and `off_value` elsewhere (an index outside [0, depth): all
    off, as TVM and TensorFlow do)."""
    indices = expect_indices("one_hot", indices)
    if not isinstance(depth, int) or depth < 0:
        raise op_error("one_hot", "depth", f"expected a non-negative int, got {depth!r}")
    axis = normalize_axis("one_hot", axis, indices.ndim + 1)
    on, off = const_like(on_value, dtype), const_like(off_value, dtype)

    def read(*i: PrimExpr) -> PrimExpr:
        index = indices[i[:axis] + i[axis + 1 :]]
        return builders.select(builders.eq(index, i[axis]), on, off)

    out_shape = [*indices.shape[:axis], depth, *indices.shape[axis:]]
    return compute(out_shape, read, name="T_one_hot", tag=INJECTIVE)
