"""Buffer: a typed, shaped view of memory, and BufferLoad, the expression that reads one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tessel.arith.analyzer import Analyzer
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Ramp, Range, Var
from tessel.ir.node import Node
from tessel.ir.type import PointerType
from tessel.support.dtype import DataType, handle, int32
from tessel.support.errors import IRTypeError
from tessel.tir.layout import const_extents, extent_product

_ZERO = IntImm(int32, 0)


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(Node):
    """A multi-dimensional view of the memory behind `data`; the scope lives in data's type."""

    data: Var
    dtype: DataType
    shape: tuple[PrimExpr, ...]
    name: str = "buffer"
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr = _ZERO
    axis_separators: tuple[int, ...] = ()
    data_alignment: int = 64
    offset_factor: int = 1
    structural_binding: ClassVar[str] = "content"  # a definition: compared once, then mapped

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            object.__setattr__(self, "dtype", DataType.of(self.dtype))
        annotation = self.data.type_annotation
        if annotation is None or not self.data.dtype.is_handle:
            raise IRTypeError(f"buffer `{self.name}` needs a data variable of pointer type")
        if self.strides and len(self.strides) != len(self.shape):
            raise IRTypeError(
                f"buffer `{self.name}` has {len(self.shape)} dimensions but "
                f"{len(self.strides)} strides"
            )
        for extent in self.shape:
            if not (extent.dtype.is_integer and not extent.dtype.is_vector):
                raise IRTypeError(f"buffer `{self.name}` has a non-integer extent `{extent}`")
        if any(not 0 < s <= len(self.shape) for s in self.axis_separators):
            raise IRTypeError(f"buffer `{self.name}` has out-of-range axis separators")

    @property
    def scope(self) -> str:
        """The storage scope ("global", "global.stack", "local", ...)."""
        assert self.data.type_annotation is not None
        return self.data.type_annotation.storage_scope

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def const_shape(self) -> tuple[int, ...] | None:
        """The shape as ints, or None if any extent is symbolic."""
        return const_extents(self.shape)

    def num_elements(self) -> PrimExpr:
        """The product of the extents."""
        return extent_product(self.shape)

    def __getitem__(self, indices: Any) -> Any:
        """`A[i, j]` reads an element; `A[0:4, j]` names a region (for T.reads / T.writes)."""
        indices = indices if isinstance(indices, tuple) else (indices,)
        if any(isinstance(i, slice) for i in indices):
            return BufferRegion.from_indices(self, indices)
        return BufferLoad(self, tuple(builders.convert(i) for i in indices))


def decl_buffer(
    shape: Any,
    dtype: DataType | str = "float32",
    name: str = "buffer",
    *,
    scope: str = "global",
    data: Var | None = None,
    strides: Any = (),
    elem_offset: Any = None,
    axis_separators: tuple[int, ...] = (),
    data_alignment: int = 64,
    offset_factor: int = 1,
) -> Buffer:
    """A new Buffer (with its own data variable unless `data` is given)."""
    dtype = DataType.of(dtype)
    shape = tuple(
        builders.convert(e) for e in (shape if isinstance(shape, tuple | list) else (shape,))
    )
    if data is None:
        data = Var(name, handle, PointerType(dtype, scope))
    return Buffer(
        data,
        dtype,
        shape,
        name,
        tuple(builders.convert(s) for s in strides),
        _ZERO if elem_offset is None else builders.convert(elem_offset),
        tuple(axis_separators),
        data_alignment,
        offset_factor,
    )


def _index_lanes(indices: tuple[PrimExpr, ...]) -> int:
    lanes = 1
    for index in indices:
        if index.dtype.lanes > 1:
            if lanes > 1 and index.dtype.lanes != lanes:
                raise IRTypeError("buffer indices have different vector lane counts")
            lanes = index.dtype.lanes
    return lanes


def _check_access(kind: str, buffer: Buffer, indices: tuple, predicate: Any, span: Any) -> int:
    if len(indices) != len(buffer.shape):
        raise IRTypeError(
            f"{kind} `{buffer.name}` uses {len(indices)} indices, "
            f"but the buffer has {len(buffer.shape)} dimensions",
            span=span,
            rule="buffer.rank",
        )
    for index in indices:
        if not (index.dtype.is_integer or isinstance(index, Ramp)):
            raise IRTypeError(
                f"{kind} `{buffer.name}` has a non-integer index `{index}`", span=span
            )
    lanes = _index_lanes(indices)
    if predicate is not None and predicate.dtype != DataType("bool", 1, lanes):
        raise IRTypeError(f"{kind} `{buffer.name}` needs a bool predicate of {lanes} lanes")
    return lanes


@dataclass(frozen=True, slots=True, eq=False)
class BufferLoad(PrimExpr):
    """Read `buffer` at `indices`; a vector index reads several lanes (masked by `predicate`)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    predicate: PrimExpr | None = None
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        lanes = _check_access("load from", self.buffer, self.indices, self.predicate, self.span)
        object.__setattr__(self, "dtype", self.buffer.dtype.with_lanes(lanes))


@dataclass(frozen=True, slots=True, eq=False)
class BufferRegion(Node):
    """A rectangular region of a buffer: one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]

    def __post_init__(self) -> None:
        if len(self.region) != len(self.buffer.shape):
            raise IRTypeError(
                f"region of `{self.buffer.name}` has {len(self.region)} ranges, "
                f"but the buffer has {len(self.buffer.shape)} dimensions",
                span=self.span,
                rule="buffer.rank",
            )

    @staticmethod
    def full(buffer: Buffer) -> BufferRegion:
        """The region covering all of `buffer`."""
        return BufferRegion(buffer, tuple(Range(_zero_like(e), e) for e in buffer.shape))

    @staticmethod
    def from_indices(buffer: Buffer, indices: tuple) -> BufferRegion:
        """A region from indices and slices (`A[0:4, j]`); a point index covers one element."""
        ranges = []
        for index in indices:
            if isinstance(index, slice):
                if index.step not in (None, 1):
                    raise IRTypeError(f"region of `{buffer.name}` has a step; only 1 is supported")
                start = builders.convert(0 if index.start is None else index.start)
                stop = index.stop
                if stop is None:
                    raise IRTypeError(f"region of `{buffer.name}` needs an explicit end")
                ranges.append(Range(start, _region_extent(start, builders.convert(stop))))
            else:
                ranges.append(Range(builders.convert(index), builders.const(1, _dtype_of(index))))
        return BufferRegion(buffer, tuple(ranges))


def _region_extent(start: PrimExpr, stop: PrimExpr) -> PrimExpr:
    """stop - start, simplified: `A[x:x + 4]` covers 4 elements, as primitives that build
    regions write it, so a printed region parses back to the same IR."""
    extent = builders.sub(stop, start)
    if isinstance(extent, IntImm) or not (stop.dtype.is_integer and start.dtype.is_integer):
        return extent
    return Analyzer().simplify(extent)


def _zero_like(e: PrimExpr) -> PrimExpr:
    return builders.const(0, e.dtype)


def _dtype_of(value: Any) -> DataType:
    return value.dtype if isinstance(value, PrimExpr) else int32


def const_product(values: tuple[int, ...]) -> int:
    """The product of a tuple of ints (1 for the empty tuple)."""
    return math.prod(values)
