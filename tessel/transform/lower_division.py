"""LowerDivision: integer floor division and modulo by a positive constant become C's truncating
`/` and `%` where the dividend is provably non-negative (the part of TVM's LowerIntrin that
rewrites floordiv and floormod).

Floor and truncating division agree on a non-negative dividend and a positive divisor, and C's
own operators are what the compiler strength-reduces and hoists out of loops; the prelude's
floor helpers branch on signs, and in an unrolled register tile those branches stayed in the
inner loop (a conv2d ran at half speed). The dividend's sign is proven from the ranges of the
enclosing loops and the values of lets, so an index such as `fused // 28` over `0 <= fused <
784` is rewritten and `(i - 1) // 4` over `0 <= i` is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import expr as E
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class LowerDivision(PrimFuncPass):
    """Rewrite `a // c` and `a % c` (c a positive constant, a >= 0) to truncating division."""

    name: ClassVar[str] = "lower_division"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_DivisionLowerer().visit(func.body))


class _DivisionLowerer(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.analyzer = Analyzer()

    def visit_For(self, loop: S.For) -> Node:
        self.analyzer.bind(loop.loop_var, E.Range(loop.min, loop.extent), allow_override=True)
        return self.generic_visit(loop)

    def visit_LetStmt(self, let: S.LetStmt) -> Node:
        if not let.value.dtype.is_vector:
            self.analyzer.bind(let.var, let.value, allow_override=True)
        return self.generic_visit(let)

    def visit_FloorDiv(self, node: E.FloorDiv) -> Node:
        return self._lowered(node, E.Div)

    def visit_FloorMod(self, node: E.FloorMod) -> Node:
        return self._lowered(node, E.Mod)

    def _lowered(self, node: E.FloorDiv | E.FloorMod, truncating: type) -> Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, E.FloorDiv | E.FloorMod)
        a, b = visited.a, visited.b
        if (
            visited.dtype.is_integer
            and not visited.dtype.is_vector
            and isinstance(b, E.IntImm)
            and b.value > 0
            and self.analyzer.const_int_bound(a).min_value >= 0
        ):
            return truncating(a, b)
        return visited
