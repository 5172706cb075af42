"""Types of graph expressions: tensors with static shapes, tuples, functions (Relay's types)."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.node import Node
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError


@dataclass(frozen=True, slots=True, eq=False)
class Type(Node):
    """Base of graph types."""


@dataclass(frozen=True, slots=True, eq=False)
class TensorType(Type):
    """A tensor of static `shape` and `dtype` (`Tensor[(1, 3), float32]`; `()` is a scalar)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
            raise IRTypeError(
                f"a tensor shape is non-negative ints, got {self.shape!r}", rule="type.shape"
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", str(DataType.of(self.dtype)))

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, slots=True, eq=False)
class TupleType(Type):
    """A tuple of values of `fields` types."""

    fields: tuple[Type, ...]


@dataclass(frozen=True, slots=True, eq=False)
class FuncType(Type):
    """A function from `arg_types` to `ret_type`."""

    arg_types: tuple[Type, ...]
    ret_type: Type


@dataclass(frozen=True, slots=True, eq=False)
class IncompleteType(Type):
    """A type not known yet; InferType solves it by unification (an unannotated parameter)."""

    structural_binding = "var"  # each one is its own unknown
