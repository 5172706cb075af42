"""HoistDivisions: an integer division by a run-time value that a loop's inner loops do not
change is computed once per iteration of that loop, bound by a let at the top of its body.

A kernel over symbolic shapes divides by run-time values: a tile loop fused over `(b * s + 7)
// 8` row tiles recovers its row tile as `fused % ((b * s + 7) // 8)` in every access of the
tile's inner loops. gcc hoists a division by a constant (LowerDivision leaves it C's `/`,
strength-reduced), but kept this one, the prelude's floor helper, in the innermost loop: MiniLM's
feed-forward dense ran 3.4x slower over symbolic rows than over 1024 constant rows (54 against
16 ms), and as fast once the division was bound before the loop. TVM's CommonSubexprElimTIR
binds repeated expressions to lets the same way; this pass binds only what C does not hoist.

A division moves only where its divisor is proved >= 1 (from the shape symbols' bounds and the
enclosing loops' ranges): the let runs at every iteration of the outer loop, also where the
original sat in an inner loop of no iterations or under a guard that fails, and must not divide
by zero there. Expressions reading memory (loads, calls) or bound inside the loop never move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.arith.dims import assume_symbol_bounds
from tessel.ir import expr as E
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, child_nodes, with_changes
from tessel.ir.structural import expr_hash, same_expr
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass

_DIVISIONS = (E.FloorDiv, E.FloorMod, E.Div, E.Mod)
# Nodes whose value is not a function of the variables alone, or that bind variables.
_IMPURE = (BufferLoad, E.Call, E.Let, E.Ramp, E.Broadcast)


@dataclass(frozen=True)
class HoistDivisions(PrimFuncPass):
    """Bind each loop-invariant division by a run-time value before the loops it is in."""

    name: ClassVar[str] = "hoist_divisions"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        if not any(  # most kernels divide by constants only: one walk, nothing to hoist
            isinstance(n, _DIVISIONS) and not isinstance(n.b, E.IntImm)
            for n in post_order(func.body)
        ):
            return func
        analyzer = assume_symbol_bounds(Analyzer(), func.body)
        body = _Hoister(analyzer).visit(func.body)
        return func if body is func.body else with_changes(func, body=body)


class _Hoister(Mutator):
    """Outermost loops first: a loop's invariant divisions are bound at the top of its body,
    then its inner loops are visited (and bind what varies with this loop only)."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit_For(self, loop: S.For) -> Node:
        self.analyzer.bind(loop.loop_var, E.Range(loop.min, loop.extent), allow_override=True)
        body = self.visit(_hoisted(loop.body, self.analyzer))
        return loop if body is loop.body else with_changes(loop, body=body)

    def visit_LetStmt(self, let: S.LetStmt) -> Node:
        if not let.value.dtype.is_vector:
            self.analyzer.bind(let.var, let.value, allow_override=True)
        return self.generic_visit(let)


def _hoisted(body: S.Stmt, analyzer: Analyzer) -> S.Stmt:
    """`body` with each division that inner loops of it repeat, and that none of its own
    variables changes, computed once at its top."""
    inner = {
        id(node.loop_var if isinstance(node, S.For) else node.var)
        for node in post_order(body)
        if isinstance(node, S.For | S.LetStmt)
    }
    found: dict[int, list[E.PrimExpr]] = {}
    memo: dict[int, tuple[object, int]] = {}
    order: list[E.PrimExpr] = []
    stack: list[tuple[Node, bool]] = [(body, False)]
    while stack:
        node, in_loop = stack.pop()
        if in_loop and isinstance(node, _DIVISIONS) and _movable(node, inner, analyzer):
            bucket = found.setdefault(expr_hash(node, memo), [])
            if not any(same_expr(node, seen) for seen in bucket):
                bucket.append(node)
                order.append(node)
            continue
        nested = in_loop or isinstance(node, S.For)
        stack.extend((child, nested) for child in reversed(child_nodes(node)))
    if not order:
        return body
    bound = [(E.Var(f"div_{k}", expr.dtype), expr) for k, expr in enumerate(order)]
    body = _Replacer(bound).visit(body)
    for var, expr in reversed(bound):
        body = S.LetStmt(var, expr, body)
    return body


def _movable(node: E.BinaryOp, inner: set[int], analyzer: Analyzer) -> bool:
    """Whether `node` is a scalar integer division by a run-time value proved >= 1, of
    variables bound outside the loop body (`inner`: the ids of those bound inside)."""
    if not node.dtype.is_integer or node.dtype.is_vector or isinstance(node.b, E.IntImm):
        return False
    for part in post_order(node):
        if isinstance(part, _IMPURE) or (isinstance(part, E.Var) and id(part) in inner):
            return False
    return analyzer.can_prove(node.b >= 1)


class _Replacer(Mutator):
    """Each bound division replaced by its variable."""

    def __init__(self, bound: list[tuple[E.Var, E.PrimExpr]]) -> None:
        super().__init__()
        self.memo_hash: dict[int, tuple[object, int]] = {}
        self.by_hash: dict[int, list[tuple[E.PrimExpr, E.Var]]] = {}
        for var, expr in bound:
            self.by_hash.setdefault(expr_hash(expr, self.memo_hash), []).append((expr, var))

    def visit_BinaryOp(self, node: E.BinaryOp) -> Node:
        if isinstance(node, _DIVISIONS):
            for expr, var in self.by_hash.get(expr_hash(node, self.memo_hash), ()):
                if same_expr(node, expr):
                    return var
        return self.generic_visit(node)
