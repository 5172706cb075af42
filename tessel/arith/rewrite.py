"""The rewrite simplifier: bottom-up, rules by node type, canonical sums, context from conditions.

Children are simplified first; integer `+ - *` spines become canonical sums (sum rules apply
there); every other node is rebuilt through the folding builders and the rules for its type are
tried in order. A rule's result is simplified again, so rewriting reaches a fixpoint; a step
limit turns a rule cycle into an InternalError naming the last rules that fired. The branches of
`Select`/`if_then_else` and the right operand of `and`/`or` are simplified under their condition.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from tessel.arith import sum_rules
from tessel.arith.canonical import from_sum, sum_fits, term_count, to_sum_counting_leaves
from tessel.arith.expr_walk import is_if_then_else
from tessel.arith.rule import Rule
from tessel.ir import builders
from tessel.ir.expr import (
    Add,
    And,
    BinaryOp,
    Call,
    CmpOp,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
    Var,
)
from tessel.ir.functor import pending_post_order
from tessel.ir.node import child_items, with_changes
from tessel.ir.structural import same_expr
from tessel.support.dtype import DataType
from tessel.support.errors import InternalError

if TYPE_CHECKING:
    from tessel.arith.analyzer import Analyzer

# How deep `Rewriter.visit` recurses before it simplifies the rest bottom-up (a few frames
# each: far below Python's default limit of 1000).
WARM_DEPTH = 64


def _expr_children(node: PrimExpr) -> list[PrimExpr]:
    """The expressions directly under `node`, in field order."""
    children: list[PrimExpr] = []
    for _, value in child_items(node):
        values = value if isinstance(value, tuple) else (value,)
        children.extend(c for c in values if isinstance(c, PrimExpr))
    return children


class StepLimitExceededError(InternalError):
    """The rules kept rewriting: a cycle among them (our bug)."""


class Rewriter:
    """One simplification of one expression (memo and atom table live for this call)."""

    def __init__(
        self,
        analyzer: Analyzer,
        rules: dict[type, tuple[Rule, ...]],
        step_limit: int,
        memo: dict[int, tuple[PrimExpr, PrimExpr]] | None = None,
    ):
        self.analyzer = analyzer
        self.rules = rules
        self.steps_left = step_limit
        self.table = analyzer.table  # shared, so sums meet the analyzer's linear facts
        # id -> (node, result): holding the node keeps its id from being reused by a new object.
        # The analyzer may hand in the results of earlier calls under the same facts.
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {} if memo is None else memo
        self.recent: deque[str] = deque(maxlen=8)
        self.depth = 0  # of the recursion of `visit`

    def visit(self, expr: PrimExpr) -> PrimExpr:
        """The simplified `expr` under the analyzer's current facts."""
        cached = self.memo.get(id(expr))
        if cached is not None and cached[0] is expr:
            return cached[1]
        if self.depth >= WARM_DEPTH:
            self._warm(expr)
        self.depth += 1  # an exception ends this Rewriter: no need to restore it
        result = self._visit(expr)
        self.depth -= 1
        self.memo[id(expr)] = (expr, result)
        self.memo[id(result)] = (result, result)
        return result

    def _warm(self, root: PrimExpr) -> None:
        """Simplify the operands under `root` bottom-up, each with its operands already in the
        memo, so that the recursion from `root` stops at the memo: a deep expression (a fused
        chain of hundreds of operators) costs bounded stack (issue 25). Only reached deep
        down, so shallow expressions are simplified exactly as before."""
        saved, self.depth = self.depth, 0
        for node in pending_post_order(root, _expr_children, self._simplified):
            if node is not root:
                self.visit(node)
        self.depth = saved

    def _simplified(self, expr: PrimExpr) -> bool:
        """Whether the memo holds `expr`'s result."""
        cached = self.memo.get(id(expr))
        return cached is not None and cached[0] is expr

    def fired(self, name: str, before: PrimExpr, after: PrimExpr) -> None:
        """Count a step and record it in the analyzer's trace."""
        self.steps_left -= 1
        self.recent.append(name)
        if self.steps_left < 0:
            raise StepLimitExceededError(
                f"simplifier did not converge; last rules: {', '.join(self.recent)}"
            )
        self.analyzer.record(name, before, after)

    def in_scope(self, condition: PrimExpr, expr: PrimExpr) -> PrimExpr:
        """`expr` simplified assuming `condition` (a fresh memo: facts change what is true)."""
        if isinstance(condition, IntImm):
            return self.visit(expr)
        saved = self.memo
        self.memo = {}
        try:
            with self.analyzer.constraint_scope(condition):
                return self.visit(expr)
        finally:
            self.memo = saved

    # ------------------------------------------------------------------ dispatch
    def _visit(self, expr: PrimExpr) -> PrimExpr:  # noqa: C901 - one dispatch over the expression kinds
        if isinstance(expr, IntImm | FloatImm | StringImm):
            return expr
        known = self.analyzer.known_value(expr)
        if known is not None:
            return known if isinstance(known, IntImm) else self.visit(known)
        if isinstance(expr, Var):
            return expr
        if expr.dtype.is_vector:
            return self._rebuild(expr)
        if isinstance(expr, Select):
            return self._apply_rules(self._visit_select(expr))
        if isinstance(expr, And | Or):
            return self._apply_rules(self._visit_logical(expr))
        if is_if_then_else(expr):
            return self._apply_rules(self._visit_if_then_else(expr))
        if not _obeys_laws(expr.dtype):  # floats, unsigned and narrow ints: folding only
            return self._rebuild(expr)
        if isinstance(expr, Add | Sub | Mul):
            return self._visit_sum(expr)
        rebuilt = self._rebuild(expr)
        if isinstance(rebuilt, CmpOp) and not _obeys_laws(rebuilt.a.dtype):
            return rebuilt
        if isinstance(rebuilt, FloorDiv | FloorMod | CmpOp) and rebuilt.a.dtype.is_integer:
            better = sum_rules.simplify_with_sums(rebuilt, self)
            if better is not rebuilt:
                return self.visit(better)
        return self._apply_rules(rebuilt)

    def _visit_sum(self, expr: PrimExpr) -> PrimExpr:
        total, leaves = to_sum_counting_leaves(expr, self.table, self.visit)
        total = sum_rules.join_div_mod(total, self)
        if not sum_fits(total, expr.dtype):
            return self._apply_rules(self._rebuild(expr))
        result = from_sum(total, self.table, expr.dtype)
        if term_count(total) < leaves:  # like terms met, cancelled or folded
            self.fired("sum-collect-terms", expr, result)
        elif same_expr(result, expr):
            result = expr  # unchanged means identical
        else:  # reordered, distributed or an operand simplified
            self.fired("sum-canonicalize", expr, result)
        return self._apply_rules(result) if type(result) in self.rules else result

    def _visit_select(self, expr: Select) -> PrimExpr:
        condition = self.visit(expr.condition)
        if isinstance(condition, IntImm):
            result = self.visit(expr.true_value if condition.value else expr.false_value)
            self.fired("select-constant-condition", expr, result)
            return result
        true_value = self.in_scope(condition, expr.true_value)
        false_value = self.in_scope(builders.logical_not(condition), expr.false_value)
        parts, old = (
            (condition, true_value, false_value),
            (expr.condition, expr.true_value, expr.false_value),
        )
        if all(new is was for new, was in zip(parts, old, strict=True)):
            return expr  # unchanged means identical
        return builders.select(condition, true_value, false_value)

    def _visit_if_then_else(self, expr: Call) -> PrimExpr:
        condition = self.visit(expr.args[0])
        if isinstance(condition, IntImm):
            result = self.visit(expr.args[1] if condition.value else expr.args[2])
            self.fired("if-then-else-constant-condition", expr, result)
            return result
        true_value = self.in_scope(condition, expr.args[1])
        false_value = self.in_scope(builders.logical_not(condition), expr.args[2])
        return with_changes(expr, args=(condition, true_value, false_value))

    def _visit_logical(self, expr: And | Or) -> PrimExpr:
        a = self.visit(expr.a)
        if isinstance(expr, And):
            b = self.in_scope(a, expr.b)
            result = builders.logical_and(a, b)
        else:
            b = self.in_scope(builders.logical_not(a), expr.b)
            result = builders.logical_or(a, b)
        if isinstance(a, IntImm) or isinstance(b, IntImm):
            self.fired("logical-constant-operand", expr, result)
        return result

    def _rebuild(self, expr: PrimExpr) -> PrimExpr:
        """`expr` with simplified expression operands, rebuilt through the folding builders."""
        changes: dict[str, object] = {}
        for name, old in child_items(expr):
            if isinstance(old, PrimExpr):
                new = self.visit(old)
                if new is not old:
                    changes[name] = new
            elif isinstance(old, tuple) and old and all(isinstance(c, PrimExpr) for c in old):
                items = tuple(self.visit(c) for c in old)
                if any(n is not o for n, o in zip(items, old, strict=True)):
                    changes[name] = items
        if not changes:
            folded = _fold(expr)
            if folded is not expr:
                self.fired("constant-fold", expr, folded)
            return folded
        if isinstance(expr, BinaryOp | CmpOp | Not) and type(expr).__name__ in _FOLDING:
            return _FOLDING[type(expr).__name__](
                *(changes.get(f, getattr(expr, f)) for f in _operands(expr))
            )
        return with_changes(expr, **changes)

    def _apply_rules(self, expr: PrimExpr) -> PrimExpr:
        for rule in self.rules.get(type(expr), ()):
            result = rule.apply(expr, self.analyzer)
            if result is not None and result is not expr:
                self.fired(rule.name, expr, result)
                return self.visit(result)
        return expr


_FOLDING = {
    "Add": builders.add, "Sub": builders.sub, "Mul": builders.mul, "Div": builders.div,
    "Mod": builders.truncmod, "FloorDiv": builders.floordiv, "FloorMod": builders.floormod,
    "Min": builders.min_value, "Max": builders.max_value, "EQ": builders.eq, "NE": builders.ne,
    "LT": builders.lt, "LE": builders.le, "GT": builders.gt, "GE": builders.ge,
    "Not": builders.logical_not,
}  # fmt: skip


def _operands(expr: PrimExpr) -> tuple[str, ...]:
    return ("a",) if isinstance(expr, Not) else ("a", "b")


def _fold(expr: PrimExpr) -> PrimExpr:
    """Constant operands folded (a node built directly may hold `2 + 3`)."""
    builder = _FOLDING.get(type(expr).__name__)
    if builder is None or not isinstance(expr, BinaryOp | CmpOp | Not):
        return expr
    operands = [getattr(expr, f) for f in _operands(expr)]
    if all(isinstance(o, IntImm | FloatImm) for o in operands):
        return builder(*operands)
    return expr


def _obeys_laws(dtype: DataType) -> bool:
    """The integer laws hold (as TVM assumes, no overflow) for int32 and int64 arithmetic, and
    trivially for bool; unsigned and narrow types wrap around in practice, so they only fold."""
    return dtype.is_bool or (dtype.is_int and dtype.bits >= 32)
