"""Statements of TensorIR (blocks are in block.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.node import Node
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError
from tessel.support.frozen_map import FrozenMap, freeze
from tessel.tir.buffer import Buffer, _check_access


def _freeze_annotations(node: Any) -> None:
    if not isinstance(node.annotations, FrozenMap):
        object.__setattr__(node, "annotations", freeze(node.annotations))


@dataclass(frozen=True, slots=True, eq=False)
class Stmt(Node):
    """Base of statements."""


@dataclass(frozen=True, slots=True, eq=False)
class BufferStore(Stmt):
    """Write `value` into `buffer` at `indices`; a vector store is masked by `predicate`."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    predicate: PrimExpr | None = None

    def __post_init__(self) -> None:
        lanes = _check_access("store to", self.buffer, self.indices, self.predicate, self.span)
        if self.value.dtype.element != self.buffer.dtype.element:
            raise IRTypeError(
                f"cannot store {self.value.dtype} into `{self.buffer.name}` of {self.buffer.dtype}",
                span=self.span,
                rule="buffer_store.dtype",
            )
        if self.value.dtype.lanes != lanes * self.buffer.dtype.lanes:
            raise IRTypeError(
                f"store to `{self.buffer.name}` writes {lanes} lanes "
                f"but the value has {self.value.dtype.lanes}",
                span=self.span,
            )


@dataclass(frozen=True, slots=True, eq=False)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (a call)."""

    value: PrimExpr


@dataclass(frozen=True, slots=True, eq=False)
class LetStmt(Stmt):
    """Bind `var` to `value` in `body`."""

    var: Var
    value: PrimExpr
    body: Stmt

    def __post_init__(self) -> None:
        if self.var.dtype != self.value.dtype:
            raise IRTypeError(
                f"let binds `{self.var.name}` of {self.var.dtype} to a {self.value.dtype} value",
                span=self.span,
            )


@dataclass(frozen=True, slots=True, eq=False)
class AttrStmt(Stmt):
    """Attach `attr_key` = `value` to `node` for the duration of `body` (pragmas, hints)."""

    node: Any
    attr_key: str
    value: Any
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class AssertStmt(Stmt):
    """Check `condition` at run time, failing with `message`, then run `body`."""

    condition: PrimExpr
    message: PrimExpr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    """Run `then_case` if `condition` holds, else `else_case` (if any)."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None

    def __post_init__(self) -> None:
        if not self.condition.dtype.is_bool or self.condition.dtype.is_vector:
            raise IRTypeError(
                f"if needs a scalar bool condition, got {self.condition.dtype}", span=self.span
            )


@dataclass(frozen=True, slots=True, eq=False)
class SeqStmt(Stmt):
    """Statements run in order."""

    seq: tuple[Stmt, ...]

    @staticmethod
    def flatten(stmts: Any) -> Stmt:
        """One statement from a list: nested sequences are flattened; one item is returned as is."""
        flat: list[Stmt] = []
        for stmt in stmts:
            if isinstance(stmt, SeqStmt):
                flat.extend(stmt.seq)
            elif stmt is not None:
                flat.append(stmt)
        if len(flat) == 1:
            return flat[0]
        return SeqStmt(tuple(flat))


class ForKind(enum.Enum):
    """How a loop's iterations are run."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """`loop_var` from `min` for `extent` iterations; annotations hold any script value."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: str | None = None
    annotations: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze_annotations(self)
        for part in (self.min, self.extent):
            if part.dtype != self.loop_var.dtype:
                raise IRTypeError(
                    f"loop `{self.loop_var.name}` of {self.loop_var.dtype} has a bound "
                    f"`{part}` of {part.dtype}",
                    span=self.span,
                )
        if (self.kind is ForKind.THREAD_BINDING) != (self.thread_binding is not None):
            raise IRTypeError("a thread-binding loop needs a thread tag, and only it may have one")


@dataclass(frozen=True, slots=True, eq=False)
class While(Stmt):
    """Run `body` while `condition` holds."""

    condition: PrimExpr
    body: Stmt


def _check_extents(name: str, extents: tuple[PrimExpr, ...]) -> None:
    for extent in extents:
        if not extent.dtype.is_integer:
            raise IRTypeError(f"allocation `{name}` has a non-integer extent `{extent}`")


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    """Allocate memory for `buffer_var` (scope in its pointer type) for the duration of `body`."""

    buffer_var: Var
    dtype: DataType
    extents: tuple[PrimExpr, ...]
    condition: PrimExpr
    body: Stmt
    annotations: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze_annotations(self)
        if self.buffer_var.type_annotation is None:
            raise IRTypeError(f"allocation `{self.buffer_var.name}` needs a pointer-typed var")
        _check_extents(self.buffer_var.name, self.extents)


@dataclass(frozen=True, slots=True, eq=False)
class AllocateConst(Stmt):
    """A constant array (`data`) or a reference into the module's "constants" (never both)."""

    buffer_var: Var
    dtype: DataType
    extents: tuple[PrimExpr, ...]
    data: np.ndarray | None
    irmod_storage_idx: int | None
    body: Stmt
    annotations: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze_annotations(self)
        if (self.data is None) == (self.irmod_storage_idx is None):
            raise IRTypeError(
                f"constant `{self.buffer_var.name}` needs exactly one of data and "
                "irmod_storage_idx (seed 001)",
                rule="allocate_const.data-xor-index",
            )
        _check_extents(self.buffer_var.name, self.extents)
        if self.data is not None:
            self._check_data(self.data)

    def _check_data(self, data: np.ndarray) -> None:
        shape = tuple(int(e.value) for e in self.extents if isinstance(e, IntImm))
        if len(shape) != len(self.extents) or data.size != int(np.prod(shape)):
            raise IRTypeError(
                f"constant `{self.buffer_var.name}` holds {data.size} values "
                f"but its extents are {[str(e) for e in self.extents]}"
            )
        if data.dtype != self.dtype.numpy:
            raise IRTypeError(
                f"constant `{self.buffer_var.name}` data is {data.dtype}, not {self.dtype}"
            )
        data.setflags(write=False)


@dataclass(frozen=True, slots=True, eq=False)
class DeclBuffer(Stmt):
    """Declare `buffer` (a typed view of already-allocated memory) for the duration of `body`."""

    buffer: Buffer
    body: Stmt
