"""The reduction expression of tensor expressions, `Reduce`, and its `CommReducer`: TensorIR
nodes (`tvm.tir.Reduce`, `tvm.tir.CommReducer`), since TVMScript writes reducers too
(`T.comm_reducer`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.node import Node
from tessel.ir.substitute import substitute
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.tir.block import IterVar


@dataclass(frozen=True, slots=True, eq=False)
class CommReducer(Node):
    """A commutative, associative combiner of value tuples: `result` of (`lhs`, `rhs`), with the
    identity element `identity_element` of each tuple position."""

    lhs: tuple[Var, ...]
    rhs: tuple[Var, ...]
    result: tuple[PrimExpr, ...]
    identity_element: tuple[PrimExpr, ...]
    name: str = "reduce"

    def __post_init__(self) -> None:
        sizes = {len(self.lhs), len(self.rhs), len(self.result), len(self.identity_element)}
        if len(sizes) != 1:
            raise UserError(
                f"reducer `{self.name}`: fcombine and fidentity must give as many values as the "
                f"reduction has (lhs {len(self.lhs)}, result {len(self.result)}, identity "
                f"{len(self.identity_element)})",
                rule="te.comm_reducer-arity",
            )
        for position, (var, value) in enumerate(zip(self.lhs, self.result, strict=True)):
            if var.dtype != value.dtype:
                raise UserError(
                    f"reducer `{self.name}`: value {position} is {var.dtype} but fcombine gives "
                    f"{value.dtype}",
                    rule="te.comm_reducer-dtype",
                )

    def combine(self, a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        """The combination of two value tuples."""
        mapping = dict(zip(self.lhs, a, strict=True)) | dict(zip(self.rhs, b, strict=True))
        return tuple(substitute(r, mapping) for r in self.result)


@dataclass(frozen=True, slots=True, eq=False)
class Reduce(PrimExpr):
    """Value `value_index` of combining `source` over the reduction `axis` where `condition`
    holds, starting from `init` (the combiner's identity when empty)."""

    combiner: CommReducer
    source: tuple[PrimExpr, ...]
    axis: tuple[IterVar, ...]
    condition: PrimExpr
    value_index: int
    init: tuple[PrimExpr, ...] = ()
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if len(self.source) != len(self.combiner.lhs):
            raise UserError(
                f"reducer `{self.combiner.name}` combines {len(self.combiner.lhs)} values, "
                f"got {len(self.source)}",
                rule="te.reduce-arity",
            )
        if self.init and len(self.init) != len(self.source):
            raise UserError(
                f"reduction `{self.combiner.name}` has {len(self.source)} values but "
                f"{len(self.init)} init values",
                rule="te.reduce-init",
            )
        object.__setattr__(self, "dtype", self.source[self.value_index].dtype)

    def initial_values(self) -> tuple[PrimExpr, ...]:
        """What the accumulator starts from: `init`, or the combiner's identity."""
        return self.init or self.combiner.identity_element

    def script_text(self, text: Callable[[Any], str]) -> str:
        """`te.sum(A[i, k], axis=[k])`, the operands printed by `text` (the printer's hook)."""
        axes = ", ".join(iv.var.name for iv in self.axis)
        source = ", ".join(text(s) for s in self.source)
        where = (
            "" if builders.is_const_int(self.condition, 1) else f", where={text(self.condition)}"
        )
        return f"te.{self.combiner.name}({source}, axis=[{axes}]{where})"


def same_reduction(a: Reduce, b: Reduce) -> bool:
    """True if two outputs of one compute are the same reduction (TVM requires it)."""
    return (
        a.combiner is b.combiner
        and a.source == b.source
        and a.axis == b.axis
        and a.condition is b.condition
        and a.init == b.init
    )


def true_condition() -> PrimExpr:
    """The condition of an unconditional reduction."""
    return builders.const(True)
