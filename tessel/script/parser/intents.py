"""What a `T.*` call means to the parser: plain descriptions the statement parser acts on.

`T.serial(0, 16)` or `T.block("C")` cannot build IR on their own (the body is not known yet),
so they return one of these; the parser recognises them by type. Helpers that make sense
outside a script (`T.Buffer`, `T.float32(0)`, `T.exp`) build IR directly instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.ir import builders
from tessel.ir.expr import Cast, IntImm, PrimExpr, Range, SizeVar, Var
from tessel.ir.type import PointerType
from tessel.script.errors import ArgumentError
from tessel.support.dtype import DataType, int64
from tessel.support.errors import UserError
from tessel.tir.block import IterVarType
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion, decl_buffer
from tessel.tir.stmt import ForKind


def is_integer_value(value: Any) -> bool:
    """A Python int or a scalar integer expression (what extents and indices must be)."""
    if isinstance(value, PrimExpr):
        return value.dtype.is_integer and not value.dtype.is_vector
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def integer_arg(who: str, what: str, value: Any, argument: int | str) -> PrimExpr:
    """`value` as an integer expression, or an ArgumentError naming `who` and the argument."""
    if is_integer_value(value):
        return builders.convert(value)
    kind = f"the float literal {value}" if isinstance(value, float) else f"`{value}`"
    if isinstance(value, PrimExpr):
        kind += f" of {value.dtype}"
    raise ArgumentError(
        f"{who} expects integer {what}, got {kind}",
        argument,
        hint=f"{what} must be int32 or int64 expressions",
    )


def dtype_arg(value: Any, argument: int | str) -> DataType:
    """`value` parsed as a data type, or an ArgumentError pointing at it."""
    try:
        return DataType.of(value)
    except (UserError, TypeError) as err:
        hint = getattr(err, "hint", None) or "use e.g. 'float32', 'int64', 'uint8' or 'bool'"
        raise ArgumentError(f"unknown data type {value!r}", argument, hint=hint) from err


def shape_arg(who: str, shape: Any, argument: int | str) -> tuple[PrimExpr, ...]:
    """A shape given as one extent or a list/tuple of extents, each an integer."""
    extents = shape if isinstance(shape, tuple | list) else (shape,)
    return tuple(integer_arg(who, "extents in the shape", e, argument) for e in extents)


class DTypeFunction:
    """`T.float32`: an annotation (`x: T.float32`), a constant maker, a cast, a var maker."""

    def __init__(self, dtype: str) -> None:
        self.dtype = DataType.of(dtype)
        self.__name__ = dtype

    def __call__(self, value: Any = None, *, is_size_var: bool = False) -> PrimExpr:
        if value is None:  # `n = T.int32()` declares a fresh (shape) variable
            return (SizeVar if is_size_var else Var)("v", self.dtype)
        if isinstance(value, PrimExpr):
            return value if value.dtype == self.dtype else Cast(self.dtype, value)
        if isinstance(value, str) and self.dtype.is_float:
            return builders.const(float(value), self.dtype)
        if not isinstance(value, int | float | bool | np.number):
            raise ArgumentError(f"T.{self.__name__} cannot make a constant from {value!r}", 0)
        return builders.const(value, self.dtype)

    def __repr__(self) -> str:
        return f"T.{self.__name__}"


class HandleFunction(DTypeFunction):
    """`T.handle`: an untyped pointer parameter's annotation; `T.handle("float32")` types it."""

    def __call__(  # type: ignore[override]  # a handle takes a pointee type, not a value
        self, dtype: Any = None, storage_scope: str = "global", **_: Any
    ) -> Var:
        if dtype is None:
            return Var("handle", self.dtype)
        element = dtype_arg(dtype, "dtype")
        return Var("handle", self.dtype, PointerType(element, storage_scope or "global"))


@dataclass(frozen=True)
class LoopIntent:
    """`T.serial/parallel/vectorized/unroll/thread_binding(...)` or `range(...)`: one For."""

    kind: ForKind
    min: PrimExpr
    extent: PrimExpr
    thread: str | None = None
    annotations: Mapping[str, Any] | None = None


def make_loop(
    who: str,
    kind: ForKind,
    start: Any,
    stop: Any = None,
    *,
    thread: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> LoopIntent:
    """A loop over [start, stop) (or [0, start) when `stop` is omitted)."""
    if stop is None:
        begin, end = integer_arg(who, "bounds", 0, 0), integer_arg(who, "bounds", start, 0)
    else:
        begin, end = integer_arg(who, "bounds", start, 0), integer_arg(who, "bounds", stop, 1)
    begin, end = builders.match_types(begin, end)
    if annotations is not None and not isinstance(annotations, Mapping):
        raise ArgumentError(f"{who} expects a dict of annotations", "annotations")
    return LoopIntent(kind, begin, builders.sub(end, begin), thread, annotations)


@dataclass(frozen=True)
class GridIntent:
    """`T.grid(n0, n1, ...)`: nested serial loops from 0."""

    extents: tuple[PrimExpr, ...]


@dataclass(frozen=True)
class BlockIntent:
    """`with T.block("name"):` (or `T.sblock`)."""

    name: str


@dataclass(frozen=True)
class InitIntent:
    """`with T.init():` inside a block."""


@dataclass(frozen=True)
class AxisIntent:
    """A block iterator: its kind, domain (None: the bound loop's range), binding and dtype."""

    kind: IterVarType
    dom: Range | None
    binding: PrimExpr
    dtype: DataType


def domain_arg(dom: Any, dtype: DataType) -> Range:
    """A block iterator domain: an extent `n` (min 0) or a pair `(begin, end)`, of the
    iterator's `dtype`; a constant bound or extent it cannot hold is refused, not wrapped."""
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, tuple | list):
        if len(dom) != 2:
            raise ArgumentError(f"a domain pair needs (begin, end), got {len(dom)} values", 0)
        begin = integer_arg("T.axis", "domain bounds", dom[0], 0)
        end = integer_arg("T.axis", "domain bounds", dom[1], 0)
        fitting_constant(begin, dtype, "the domain begin", 0)
        fitting_constant(end, dtype, "the domain end", 0)
        if isinstance(begin, IntImm) and isinstance(end, IntImm):
            extent = builders.const(end.value - begin.value, int64)
            fitting_constant(extent, dtype, "the domain extent", 0)
        begin, end = builders.cast(begin, dtype), builders.cast(end, dtype)
        return Range(begin, builders.sub(end, begin))
    extent = integer_arg("T.axis", "domains", dom, 0)
    fitting_constant(extent, dtype, "the domain extent", 0)
    return Range(builders.const(0, dtype), builders.cast(extent, dtype))


def fitting_constant(value: PrimExpr, dtype: DataType, what: str, argument: int | str) -> None:
    """Refuse a constant `value` outside `dtype`'s range (casting it would wrap silently)."""
    if not isinstance(value, IntImm) or dtype.min_value() <= value.value <= dtype.max_value():
        return
    raise ArgumentError(
        f"{what} {value.value} does not fit in the block iterator's {dtype}",
        argument,
        hint="bind the iterator to an int64 loop (`for i in range(T.int64(n))`), or pass "
        'dtype="int64", for a domain beyond int32',
    )


@dataclass(frozen=True)
class RegionsIntent:
    """`T.reads(...)` / `T.writes(...)`: the regions a block reads or writes."""

    kind: str  # "reads" or "writes"
    regions: tuple[BufferRegion, ...]


def region_of(value: Any, argument: int) -> BufferRegion:
    """A BufferRegion from a region `A[0:4, i]`, a point `A[i, j]` or a whole buffer `A`."""
    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, BufferLoad):
        return BufferRegion.from_indices(value.buffer, value.indices)
    if isinstance(value, Buffer):
        return BufferRegion.full(value)
    raise ArgumentError(f"expected a buffer region such as A[0:4, i], got {value!r}", argument)


@dataclass(frozen=True)
class WhereIntent:
    """`T.where(cond)`: the block's predicate."""

    condition: PrimExpr


@dataclass(frozen=True)
class AttrsIntent:
    """`T.block_attr({...})` (target "block") or `T.func_attr({...})` (target "func")."""

    target: str
    attrs: Mapping[str, Any]


@dataclass(frozen=True)
class BufferSpec:
    """The arguments of a buffer declaration; `build(name)` makes the Buffer."""

    shape: tuple[PrimExpr, ...]
    dtype: DataType
    scope: str = "global"
    data: Var | None = None
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    align: int = 64
    offset_factor: int = 1
    axis_separators: tuple[int, ...] = ()

    def build(self, name: str) -> Buffer:
        """The Buffer named `name` (with a fresh data variable unless `data` was given)."""
        return decl_buffer(
            self.shape,
            self.dtype,
            name,
            scope=self.scope or "global",
            data=self.data,
            strides=self.strides,
            elem_offset=self.elem_offset,
            axis_separators=self.axis_separators,
            data_alignment=self.align,
            offset_factor=self.offset_factor,
        )


# TVM's buffer types. "auto_broadcast" (a size-1 dimension that may broadcast) is accepted and
# not modelled: Tessel's buffers are indexed as declared.
BUFFER_TYPES = ("", "default", "auto_broadcast")


def buffer_spec(
    who: str,
    shape: Any,
    dtype: Any = "float32",
    *,
    data: Any = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: Any = "global",
    align: Any = 64,
    offset_factor: Any = 1,
    axis_separators: Any = None,
    buffer_type: Any = "default",
) -> BufferSpec:
    """Check the arguments of T.Buffer / T.alloc_buffer / T.decl_buffer / T.match_buffer."""
    if buffer_type not in BUFFER_TYPES:
        raise ArgumentError(
            f"{who}: unknown buffer_type {buffer_type!r}",
            "buffer_type",
            hint='TVM\'s buffer types are "default" and "auto_broadcast"',
        )
    if isinstance(data, Buffer):  # `T.decl_buffer(..., data=x)` with x from `x = T.allocate(...)`
        data = data.data
    if data is not None and not (isinstance(data, Var) and data.type_annotation is not None):
        raise ArgumentError(f"{who}: data= must be a pointer variable, got {data!r}", "data")
    if not isinstance(scope, str):
        raise ArgumentError(f"{who}: scope must be a string, got {scope!r}", "scope")
    return BufferSpec(
        shape_arg(who, shape, "shape"),
        dtype_arg(dtype, "dtype"),
        scope or "global",
        data,
        shape_arg(who, strides, "strides") if strides else (),
        None if elem_offset is None else integer_arg(who, "offsets", elem_offset, "elem_offset"),
        int(align) if align else 64,
        int(offset_factor) if offset_factor else 1,
        separators_arg(who, axis_separators),
    )


def separators_arg(who: str, separators: Any) -> tuple[int, ...]:
    """`axis_separators=[1, ...]`: increasing integer axes where a new physical axis starts."""
    values = separators if isinstance(separators, list | tuple) else (separators,)
    if separators is None:
        return ()
    numbers = [v.value if isinstance(v, IntImm) else v for v in values]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise ArgumentError(
            f"{who}: axis_separators must be a list of integers, got {separators!r}",
            "axis_separators",
        )
    if any(a >= b for a, b in zip(numbers, numbers[1:], strict=False)):
        raise ArgumentError(
            f"{who}: axis_separators must be increasing, got {numbers}", "axis_separators"
        )
    return tuple(numbers)


@dataclass(frozen=True)
class AllocBufferIntent:
    """`X = T.alloc_buffer(...)`: a buffer allocated by the enclosing block."""

    spec: BufferSpec


@dataclass(frozen=True)
class MatchBufferIntent:
    """`X = T.match_buffer(source, ...)`: source is a handle parameter or a buffer region."""

    source: Any
    spec: BufferSpec


@dataclass(frozen=True)
class DeclBufferIntent:
    """`X = T.decl_buffer(...)`: a DeclBuffer (plus an Allocate when no data is given)."""

    spec: BufferSpec


@dataclass(frozen=True)
class AllocateIntent:
    """`T.allocate(extents, dtype, scope)`: a buffer assignment, or raw memory in `with ... as`."""

    extents: tuple[PrimExpr, ...]
    dtype: DataType
    scope: str
    condition: PrimExpr
    annotations: Mapping[str, Any]


@dataclass(frozen=True)
class AllocateConstIntent:
    """`X = T.allocate_const(data, dtype, extents)`: a constant buffer."""

    data: np.ndarray | None
    dtype: DataType
    extents: tuple[PrimExpr, ...]
    irmod_storage_idx: int | None
    annotations: Mapping[str, Any]


@dataclass(frozen=True)
class AttrIntent:
    """`with T.attr(node, key, value):`."""

    node: Any
    key: str
    value: Any


@dataclass(frozen=True)
class LetStmtIntent:
    """`T.LetStmt(value, var=...)` (or `with T.let(x, value):`): a LetStmt whose variable is
    `var`, or the name it is assigned to / bound by `as`."""

    value: PrimExpr
    var: Var | None = None


@dataclass(frozen=True)
class EnvThreadIntent:
    """`tx = T.env_thread("threadIdx.x")`: a thread variable for later `T.launch_thread`s."""

    thread_tag: str
    dtype: DataType


@dataclass(frozen=True)
class LaunchThreadIntent:
    """`T.launch_thread("blockIdx.x", 128)` or `T.launch_thread(tx, 64)`: a "thread_extent"
    AttrStmt over the rest of the block (or over a `with` body)."""

    thread: str | Var
    extent: PrimExpr


@dataclass(frozen=True)
class MetaVarIntent:
    """`x = T.meta_var(value)`: the name stands for `value` itself (no LetStmt)."""

    value: Any
