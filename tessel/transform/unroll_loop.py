"""UnrollLoop: replace a `T.unroll` loop of small constant extent by copies of its body (TVM's
UnrollLoop, for explicitly unrolled loops).

Each copy has the loop variable replaced by its value and is simplified. A loop whose extent is
not a constant, or is larger than `max_extent`, stays a loop: codegen marks it with an unroll
pragma and the C compiler decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import expr as E
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.function import PrimFunc
from tessel.transform.no_op import no_op
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.simplify import StmtSimplifier


@dataclass(frozen=True)
class UnrollLoop(PrimFuncPass):
    """Unroll each `T.unroll` loop with a constant extent of at most `max_extent` iterations."""

    name: ClassVar[str] = "unroll_loop"
    max_extent: int = 64

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Unroller(self.max_extent).visit(func.body))


class _Unroller(Mutator):
    def __init__(self, max_extent: int) -> None:
        super().__init__()
        self.max_extent = max_extent

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.UNROLLED:
            return visited
        if not isinstance(visited.extent, E.IntImm) or visited.extent.value > self.max_extent:
            return visited
        if visited.extent.value <= 0:
            return no_op()
        copies = []
        for k in range(visited.extent.value):
            value = visited.min + E.IntImm(visited.loop_var.dtype, k)
            copy = substitute(visited.body, {visited.loop_var: value})
            copies.append(StmtSimplifier().visit(copy))
        return S.SeqStmt.flatten(copies)
