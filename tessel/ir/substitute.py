"""Substitution of variables by expressions, in expressions and statements alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import Mutator
from tessel.ir.node import Node

N = TypeVar("N", bound=Node)


class _Substituter(Mutator):
    def __init__(self, mapping: Mapping[Var, PrimExpr]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Var(self, var: Var) -> PrimExpr:
        return self.mapping.get(var, var)


def substitute(node: N, mapping: Mapping[Var, PrimExpr]) -> N:
    """`node` with every use of a mapped variable replaced; the same object if none occurs.

    Buffers whose shape or data mention a mapped variable are rebuilt once and shared by
    every access, so buffer identity is preserved across the result.
    """
    if not mapping:
        return node
    return _Substituter(mapping).visit(node)  # type: ignore[return-value]  # same node kind
