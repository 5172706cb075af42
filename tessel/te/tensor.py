"""Tensors and the operations that produce them: placeholders and computes (TVM's te.Tensor).

A tensor expression reads a tensor with `ProducerLoad` (TVM's name); `create_prim_func` turns
each load into a `BufferLoad` of the buffer it gives the tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import post_order
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.te.tensor_operators import TensorOperators
from tessel.tir.block import IterVar
from tessel.tir.layout import const_extents
from tessel.tir.reduce_expr import Reduce

if TYPE_CHECKING:
    from tessel.support.frozen_map import FrozenMap


@dataclass(frozen=True, slots=True, eq=False)
class TensorIterVar(IterVar):
    """An axis of a compute (spatial or reduction) that can be used where an expression is
    expected, as TVM's `te.reduce_axis` results are: `A[i, k]`, `k * 2 + 1`."""

    def as_prim_expr(self) -> PrimExpr:
        """The axis's variable."""
        return self.var

    def __add__(self, other: Any) -> PrimExpr:
        return self.var + other

    def __radd__(self, other: Any) -> PrimExpr:
        return builders.add(other, self.var)

    def __sub__(self, other: Any) -> PrimExpr:
        return self.var - other

    def __rsub__(self, other: Any) -> PrimExpr:
        return builders.sub(other, self.var)

    def __mul__(self, other: Any) -> PrimExpr:
        return self.var * other

    def __rmul__(self, other: Any) -> PrimExpr:
        return builders.mul(other, self.var)

    def __floordiv__(self, other: Any) -> PrimExpr:
        return self.var // other

    def __mod__(self, other: Any) -> PrimExpr:
        return self.var % other

    def __neg__(self) -> PrimExpr:
        return -self.var

    def __lt__(self, other: Any) -> PrimExpr:
        return self.var < other

    def __le__(self, other: Any) -> PrimExpr:
        return self.var <= other

    def __gt__(self, other: Any) -> PrimExpr:
        return self.var > other

    def __ge__(self, other: Any) -> PrimExpr:
        return self.var >= other


def as_expr(value: Any) -> PrimExpr:
    """An expression from an expression, an axis, or a Python number."""
    return builders.convert(value)


class Tensor(TensorOperators):
    """Output `value_index` of an operation: a shape, a dtype, and `A[i, j]` to read it; `A + B`,
    `A * 2`, `-A` on whole tensors build elementwise computes (see `tensor_operators`)."""

    __slots__ = ("op", "value_index", "shape", "dtype")

    def __init__(self, op: Operation, value_index: int, shape: tuple[PrimExpr, ...], dtype: str):
        self.op, self.value_index, self.shape, self.dtype = op, value_index, shape, dtype

    @property
    def name(self) -> str:
        """The operation's name; `name.v<i>` for an output of a multi-output operation."""
        if self.op.num_outputs == 1:
            return self.op.name
        return f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def const_shape(self) -> tuple[int, ...] | None:
        """The shape as ints, or None if an extent is symbolic."""
        return const_extents(self.shape)

    def __getitem__(self, indices: Any) -> PrimExpr:
        indices = indices if isinstance(indices, tuple) else (indices,)
        return ProducerLoad(self, tuple(as_expr(i) for i in indices))

    def __call__(self, *indices: Any) -> PrimExpr:
        return self[indices]

    def __repr__(self) -> str:
        shape = ", ".join(str(e) for e in self.shape)
        return f"Tensor(shape=[{shape}], op.name={self.op.name}, dtype={self.dtype})"

    __str__ = __repr__


@dataclass(frozen=True, slots=True, eq=False)
class ProducerLoad(PrimExpr):
    """Read element `indices` of a tensor inside a tensor expression."""

    producer: Tensor
    indices: tuple[PrimExpr, ...]
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if len(self.indices) != self.producer.ndim:
            raise UserError(
                f"tensor `{self.producer.name}` has {self.producer.ndim} dimensions but is read "
                f"with {len(self.indices)} indices",
                rule="te.index-count",
            )
        for index in self.indices:
            if not index.dtype.is_integer or index.dtype.is_vector:
                raise UserError(
                    f"tensor `{self.producer.name}` is indexed by `{index}` of {index.dtype}; "
                    "indices must be scalar integers",
                    rule="te.index-dtype",
                    hint='cast a tensor value used as an index with te.Cast / astype("int32")',
                )
        object.__setattr__(self, "dtype", DataType.of(self.producer.dtype))

    def script_text(self, text: Callable[[Any], str]) -> str:
        """`A[i, j]`, the operands printed by `text` (the script printer's hook)."""
        return f"{self.producer.name}[{', '.join(text(i) for i in self.indices)}]"


class Operation:
    """Something that produces tensors: a placeholder or a compute."""

    __slots__ = ("name", "tag", "attrs")

    num_outputs = 1

    def __init__(self, name: str, tag: str = "", attrs: FrozenMap | dict | None = None):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def output(self, index: int) -> Tensor:
        """Output tensor `index`."""
        return self.outputs[index]  # type: ignore[attr-defined]  # set by subclasses


class PlaceholderOp(Operation):
    """An input: a tensor whose values come from the caller."""

    __slots__ = ("outputs",)

    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: str):
        super().__init__(name)
        self.outputs = (Tensor(self, 0, shape, dtype),)

    def __repr__(self) -> str:
        return f"PlaceholderOp({self.name})"


class ComputeOp(Operation):
    """Tensors defined elementwise by an expression of their axes (and reduction axes)."""

    __slots__ = ("axis", "reduce_axis", "body", "outputs")

    def __init__(
        self,
        name: str,
        tag: str,
        attrs: dict | None,
        axis: tuple[TensorIterVar, ...],
        body: tuple[PrimExpr, ...],
    ):
        super().__init__(name, tag, attrs)
        self.axis, self.body = axis, body
        self.reduce_axis: tuple[IterVar, ...] = body[0].axis if isinstance(body[0], Reduce) else ()
        shape = tuple(iv.dom.extent for iv in axis)
        self.outputs = tuple(Tensor(self, i, shape, str(e.dtype)) for i, e in enumerate(body))

    @property
    def num_outputs(self) -> int:  # type: ignore[override]  # a property here, a constant above
        return len(self.body)

    @property
    def input_tensors(self) -> list[Tensor]:
        """The tensors the body reads, each once, in order of first appearance."""
        return tensors_read(self.body)

    def __repr__(self) -> str:
        return f"ComputeOp({self.name})"


def tensors_read(exprs: tuple[PrimExpr, ...] | list[PrimExpr]) -> list[Tensor]:
    """The tensors that `exprs` read, each once, in order of first appearance."""
    seen: dict[Tensor, None] = {}
    for expr in exprs:
        for node in post_order(expr):
            if isinstance(node, ProducerLoad):
                seen.setdefault(node.producer, None)
    return list(seen)
