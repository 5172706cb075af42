"""AutoUnrollLoop: TVM's auto-unroll rule (UnrollLoop's `auto_max_step`) for the loops under a
`pragma_auto_unroll_max_step` = N: every serial loop of constant extent whose whole nest runs at
most N statements, and holds only such loops, becomes an UNROLLED loop.

UnrollLoop copies the bodies of small `T.unroll` loops in the IR; this pass only marks loops, and
the C backend prints an UNROLLED loop as `#pragma GCC unroll`, so the C compiler does the copying
(the C is as short as the IR, and gcc still sees one loop to vectorize or not). It runs after
VectorizeLoop (a loop holding a vectorized loop is serial by then, with vector statements, and
fits a budget it did not fit before), at the end of the pipeline, on the IR the C backend
prints. The pragma AttrStmts stay: the C names them in a comment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.expr import IntImm
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, child_items, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass

PRAGMA_PREFIX = "pragma_"
AUTO_UNROLL_MAX_STEP = "pragma_auto_unroll_max_step"


@dataclass(frozen=True)
class AutoUnrollLoop(PrimFuncPass):
    """Mark UNROLLED the loops that each `pragma_auto_unroll_max_step` budget covers."""

    name: ClassVar[str] = "auto_unroll_loop"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_PragmaScopes().visit(func.body))


def auto_unroll_budget(node: S.AttrStmt) -> int | None:
    """The step budget of a `pragma_auto_unroll_max_step` with a usable value, else None."""
    value = node.value
    if node.attr_key != AUTO_UNROLL_MAX_STEP or not isinstance(value, IntImm):
        return None
    return value.value if value.value > 0 else None


class _PragmaScopes(Mutator):
    """Applies each budget to what its pragma is about: the loop whose variable is the
    AttrStmt's node (LowerOpaqueBlock puts a loop's pragmas right inside it), else the
    AttrStmt's body. Marking only turns SERIAL into UNROLLED, which the step count treats
    alike, so the budgets may be applied in any order, and a loop's pragma applied to the
    body too changes nothing more."""

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)
        assert isinstance(visited, S.For)
        for budget in _loop_budgets(visited):
            visited = _mark(visited, budget)
        return visited

    def visit_AttrStmt(self, node: S.AttrStmt) -> Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, S.AttrStmt)
        budget = auto_unroll_budget(visited)
        if budget is None:
            return visited
        return with_changes(visited, body=_mark(visited.body, budget))


def _loop_budgets(loop: S.For) -> list[int]:
    """The budgets of the auto-unroll pragmas about `loop`: the pragma AttrStmts on its variable
    that wrap its body, before any other statement (as the C backend finds them)."""
    budgets, body = [], loop.body
    while (
        isinstance(body, S.AttrStmt)
        and body.attr_key.startswith(PRAGMA_PREFIX)
        and body.node is loop.loop_var
    ):
        budget = auto_unroll_budget(body)
        if budget is not None:
            budgets.append(budget)
        body = body.body
    return budgets


def _mark(stmt: S.Stmt, max_step: int) -> S.Stmt:
    """`stmt` with the loops the auto-unroll rule picks for `max_step` marked UNROLLED."""
    result = _Marker(max_step).visit(stmt)
    assert isinstance(result, S.Stmt)
    return result


class _Marker(Mutator):
    def __init__(self, max_step: int) -> None:
        super().__init__()
        self.max_step = max_step

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)  # inner loops first: they decide the outer ones
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.SERIAL:
            return visited
        steps = _steps(visited)
        if steps is None or steps > self.max_step:
            return visited
        return with_changes(visited, kind=S.ForKind.UNROLLED)


def _steps(stmt: S.Stmt) -> int | None:
    """How many statements `stmt` runs with every loop in it unrolled; None if a loop in it
    stays a loop (not serial or unrolled, or of non-constant extent)."""
    if isinstance(stmt, S.While):
        return None
    if isinstance(stmt, S.For):
        unrollable = stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED)
        inner = _steps(stmt.body)
        if not unrollable or not isinstance(stmt.extent, IntImm) or inner is None:
            return None
        return stmt.extent.value * inner
    total = 0
    for _, child in child_items(stmt):
        children = child if isinstance(child, tuple) else (child,)
        for item in children:
            if not isinstance(item, S.Stmt):
                continue
            steps = _steps(item)
            if steps is None:
                return None
            total += steps
    return max(total, 1)
