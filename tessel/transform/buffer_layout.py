"""Strides, flat indices and flat extents of buffers, shared by the passes that need them.

Flat indices are built in int64 when the buffer may reach past INT32_MAX elements (a constant
shape that large, or a symbolic one whose bound is unknown or too large), so the index of a
large buffer cannot overflow; otherwise they stay in the indices' own dtype (int32 for most
kernels, which C computes fastest).

Axis separators (TVM's `axis_separators`) split a buffer's logical axes into groups; each group
is one physical axis, whose extent is the group's element count and whose index is the group's
row-major index. A buffer without separators has one group: its flat extent and flat index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.support.dtype import DataType, int32, int64
from tessel.tir.buffer import Buffer
from tessel.tir.layout import extent_product, row_major_strides

_INT32_MAX = int32.max_value()


def compact_strides(shape: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
    """Row-major strides of a dense array of `shape` (the last dimension has stride 1)."""
    one = builders.const(1, shape[-1].dtype) if shape else builders.const(1)
    return row_major_strides(shape, one)


def buffer_strides(buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The buffer's explicit strides, or its compact strides when it declares none."""
    return buffer.strides if buffer.strides else compact_strides(buffer.shape)


def _upper_bound(expr: PrimExpr) -> int | None:
    """A bound on a non-negative extent, stride or offset: a constant's value, a variable's
    dtype maximum; None when unknown."""
    if isinstance(expr, IntImm):
        return int(expr.value)
    if isinstance(expr, Var) and expr.dtype.is_integer:
        return int(expr.dtype.max_value())
    return None


def _upper_bounds(exprs: Sequence[PrimExpr]) -> list[int] | None:
    """`_upper_bound` of each expression; None if any is unknown."""
    bounds = [_upper_bound(e) for e in exprs]
    return None if None in bounds else [b for b in bounds if b is not None]


def _reach_bound(buffer: Buffer) -> int | None:
    """A bound on how many elements past `buffer.data` the buffer touches (None: unknown)."""
    offset = _upper_bound(buffer.elem_offset)
    extents = _upper_bounds(buffer.shape)
    strides = _upper_bounds(buffer.strides)
    if offset is None or extents is None or strides is None:
        return None
    if 0 in extents:
        return offset
    strides = strides or list(row_major_strides(extents, 1))
    return offset + sum((e - 1) * s for e, s in zip(extents, strides, strict=True)) + 1


def index_dtype(buffer: Buffer) -> DataType:
    """int64 if the buffer's flat extent may exceed INT32_MAX, else int32."""
    reach = _reach_bound(buffer)
    return int64 if reach is None or reach > _INT32_MAX else int32


def _widened(expr: PrimExpr, dtype: DataType) -> PrimExpr:
    """`expr` cast up to `dtype`'s width (never narrowed; vector lanes kept)."""
    if not expr.dtype.is_integer or expr.dtype.bits >= dtype.bits:
        return expr
    return builders.cast(expr, dtype.with_lanes(expr.dtype.lanes))


def flat_index(buffer: Buffer, indices: Sequence[PrimExpr]) -> PrimExpr:
    """The element offset from `buffer.data` of `buffer[indices]`: elem_offset + sum(i * stride),
    in int64 when the buffer may be that large (`index_dtype`)."""
    dtype = index_dtype(buffer)
    index: PrimExpr = _widened(buffer.elem_offset, dtype)
    for value, stride in zip(indices, buffer_strides(buffer), strict=True):
        index = index + _widened(value, dtype) * _widened(stride, dtype)
    return index


def flat_extent(buffer: Buffer) -> PrimExpr:
    """How many elements past `buffer.data` the buffer may touch (its allocation size)."""
    dtype = index_dtype(buffer)
    offset = _widened(buffer.elem_offset, dtype)
    shape = [_widened(e, dtype) for e in buffer.shape]
    if not buffer.strides:
        return offset + extent_product(shape)
    last: PrimExpr = offset
    for extent, stride in zip(shape, buffer.strides, strict=True):
        last = last + (extent - 1) * _widened(stride, dtype)
    return last + 1


def allocation_size(extents: Sequence[PrimExpr]) -> PrimExpr:
    """The element count of an allocation with `extents`, in int64 when it may exceed
    INT32_MAX."""
    bounds = _upper_bounds(extents)
    fits = bounds is not None and math.prod(bounds) <= _INT32_MAX
    return extent_product(extents if fits else [_widened(e, int64) for e in extents])


def axis_groups(buffer: Buffer) -> tuple[tuple[int, int], ...]:
    """The logical axes `[start, end)` of each physical axis: the buffer's axes split before each
    axis separator (one group, all the axes, without separators)."""
    bounds = (0, *buffer.axis_separators, len(buffer.shape))
    return tuple(zip(bounds[:-1], bounds[1:], strict=True))


def physical_shape(buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The extent of each physical axis: a group's element count (the flat extent, elem_offset
    and strides included, without separators). A separated buffer must be dense."""
    if not buffer.axis_separators:
        return (flat_extent(buffer),)
    return tuple(allocation_size(buffer.shape[a:b]) for a, b in axis_groups(buffer))


def physical_indices(buffer: Buffer, indices: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
    """The index along each physical axis of `buffer[indices]`: the row-major index within each
    axis group (the flat index without separators), in int64 where the group may be that large."""
    if not buffer.axis_separators:
        return (flat_index(buffer, indices),)
    return tuple(_dense_index(buffer.shape[a:b], indices[a:b]) for a, b in axis_groups(buffer))


def _dense_index(extents: Sequence[PrimExpr], indices: Sequence[PrimExpr]) -> PrimExpr:
    """The row-major index of `indices` in a dense array of `extents`, widened to int64 when the
    array may hold more than INT32_MAX elements (as `allocation_size` counts it)."""
    bounds = _upper_bounds(extents)
    dtype = int32 if bounds is not None and math.prod(bounds) <= _INT32_MAX else int64
    index: PrimExpr = builders.const(0)  # an int32 zero: the terms' dtype wins
    for value, stride in zip(indices, compact_strides(extents), strict=True):
        index = index + _widened(value, dtype) * _widened(stride, dtype)
    return index
