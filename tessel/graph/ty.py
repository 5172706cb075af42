"""Types of graph expressions: tensors with static or symbolic shapes, tuples, functions (Relay's
types)."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.arith.dims import Dim, is_static, normalize_dim
from tessel.ir.node import Node
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError


@dataclass(frozen=True, slots=True, eq=False)
class Type(Node):
    """Base of graph types."""


@dataclass(frozen=True, slots=True, eq=False)
class TensorType(Type):
    """A tensor of `shape` and `dtype` (`Tensor[(1, 3), float32]`; `()` is a scalar). A
    dimension is a non-negative int or a symbolic integer expression (`Tensor[(batch, 384),
    float32]`, tessel/arith/dims.py)."""

    shape: tuple[Dim, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        try:
            shape = tuple(normalize_dim(d) for d in self.shape)
        except TypeError as err:
            raise IRTypeError(
                f"a tensor shape is non-negative ints or integer expressions, got "
                f"{self.shape!r} ({err})",
                rule="type.shape",
            ) from None
        if any(isinstance(d, int) and d < 0 for d in shape):
            raise IRTypeError(
                f"a tensor shape is non-negative, got {self.shape!r}", rule="type.shape"
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", str(DataType.of(self.dtype)))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True if every dimension is an int."""
        return is_static(self.shape)


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
