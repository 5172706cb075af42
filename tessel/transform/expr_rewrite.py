"""ExprRewriter: a Mutator for passes that rewrite expression nodes one at a time, bottom-up,
on an explicit stack, so the depth of an expression never becomes Python's recursion (a fused
elementwise chain may be thousands of calls deep; a `visit_Call` override recursed once per
call)."""

from __future__ import annotations

from tessel.ir.expr import PrimExpr
from tessel.ir.functor import Mutator, pending_post_order
from tessel.ir.node import Node, child_items, with_changes


class ExprRewriter(Mutator):
    """Statements are rebuilt as by Mutator; each expression under them goes through
    `rewrite`, operands first. A subexpression shared within one expression is rewritten once;
    an expression nothing changes in comes back as the same object."""

    def rewrite(self, node: PrimExpr) -> PrimExpr:
        """`node`, its operands already rewritten, rewritten by the pass; override this."""
        return node

    def operands(self, node: PrimExpr) -> tuple[PrimExpr, ...]:
        """The operands of `node` to rewrite before it (override to leave some alone)."""
        found: list[PrimExpr] = []
        for _, value in child_items(node):
            values = value if isinstance(value, tuple) else (value,)
            found.extend(v for v in values if isinstance(v, PrimExpr))
        return tuple(found)

    def visit_PrimExpr(self, root: PrimExpr) -> Node:
        done: dict[int, PrimExpr] = {}
        for node in pending_post_order(root, self.operands, lambda n: id(n) in done):
            done[id(node)] = self.rewrite(_with_operands(node, done))
        return done[id(root)]


def _with_operands(node: PrimExpr, done: dict[int, PrimExpr]) -> PrimExpr:
    """`node` with each operand already rewritten replaced by its rewrite."""
    changes: dict[str, object] = {}
    for name, value in child_items(node):
        if isinstance(value, tuple):
            items = tuple(done.get(id(v), v) for v in value)
            if any(new is not old for new, old in zip(items, value, strict=True)):
                changes[name] = items
        elif done.get(id(value), value) is not value:
            changes[name] = done[id(value)]
    return with_changes(node, **changes)
