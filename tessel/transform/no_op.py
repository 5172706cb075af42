"""The no-op statement passes leave where they delete one, and a Mutator that tidies them away."""

from __future__ import annotations

from tessel.ir import builders
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.tir.stmt import Evaluate, For, SeqStmt, Stmt


def no_op() -> Stmt:
    """A statement that does nothing (`T.evaluate(0)`)."""
    return Evaluate(builders.const(0))


def is_no_op(stmt: Stmt) -> bool:
    """True for `T.evaluate(<constant>)`, which has no effect."""
    return isinstance(stmt, Evaluate) and builders.is_const_int(stmt.value)


class NoOpDroppingMutator(Mutator):
    """A Mutator whose sequences drop the no-ops that its other visit methods produce."""

    def visit_SeqStmt(self, seq: SeqStmt) -> Node:
        items = tuple(self.visit(s) for s in seq.seq)
        if all(new is old for new, old in zip(items, seq.seq, strict=True)):
            return seq
        kept = [s for s in items if not is_no_op(s)]
        return SeqStmt.flatten(kept) if kept else no_op()

    def visit_For(self, loop: For) -> Node:
        body = self.visit(loop.body)
        if body is not loop.body and is_no_op(body):  # a loop left empty (its bounds are pure)
            return no_op()
        return with_changes(loop, body=body)
