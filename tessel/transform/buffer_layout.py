"""Strides, flat indices and flat extents of buffers, shared by the passes that need them."""

from __future__ import annotations

from collections.abc import Sequence

from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.tir.buffer import Buffer


def compact_strides(shape: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
    """Row-major strides of a dense array of `shape` (the last dimension has stride 1)."""
    strides: list[PrimExpr] = []
    stride: PrimExpr = builders.const(1, shape[-1].dtype) if shape else builders.const(1)
    for extent in reversed(shape):
        strides.append(stride)
        stride = stride * extent
    return tuple(reversed(strides))


def buffer_strides(buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The buffer's explicit strides, or its compact strides when it declares none."""
    return buffer.strides if buffer.strides else compact_strides(buffer.shape)


def flat_index(buffer: Buffer, indices: Sequence[PrimExpr]) -> PrimExpr:
    """The element offset from `buffer.data` of `buffer[indices]`: elem_offset + sum(i * stride)."""
    index: PrimExpr = buffer.elem_offset
    for value, stride in zip(indices, buffer_strides(buffer), strict=True):
        index = index + value * stride
    return index


def flat_extent(buffer: Buffer) -> PrimExpr:
    """How many elements past `buffer.data` the buffer may touch (its allocation size)."""
    if not buffer.strides:
        return buffer.elem_offset + buffer.num_elements()
    last: PrimExpr = buffer.elem_offset
    for extent, stride in zip(buffer.shape, buffer.strides, strict=True):
        last = last + (extent - 1) * stride
    return last + 1
