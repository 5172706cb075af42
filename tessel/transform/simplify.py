"""Simplify: simplify every expression under what the statements around it make known (TVM's
tir.transform.Simplify).

The analyzer learns, while walking down the function: each loop variable's range; each `let`
whose value is pure arithmetic; an `if`'s condition (or its negation) inside its branches; and
each `T.assume(cond)` for the statements after it in the same sequence, so buffer constraints
(docs/architecture.md §5) prove conditions and remove branches by default. A lowered
buffer-constraint block, a nest of loops around one `T.assume`, states the condition for every
point of its loops, and a constant nest storing a pure value (or a padding `if_then_else`) into
every element states the buffer's contents: both are instantiated at each later load of the
buffer (`for i in range(16): T.assume(not i >= 14 or A[i] == 0)` gives `not j >= 14 or A[j] == 0`
at a load `A[j]`).
An `if` whose condition is proven true or false is replaced by the branch that runs.

A fact that reads a buffer holds only until that buffer may change: an `if` condition is not
used inside a branch that writes a buffer it reads, and an assumption (or known contents) stops
applying at the first later statement of its sequence holding a store that can make it false,
or passing the buffer's data pointer to a call. A store to an element the fact says nothing
about (`A[3] = 5` after `T.assume(i < 14 or A[i] == 0)` over all i), or of a value that keeps
it true, does not end it (TVM keeps a known buffer value until a write can change it).
A store of an element into itself (`A[i] = A[i]`) does nothing and is removed, as in TVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir import stmt as S
from tessel.tir.analysis.buffer_constraint import (
    BufferConstraint,
    assumed_condition,
    constraint_of,
    known_contents_of,
    store_keeps,
)
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.no_op import NoOpDroppingMutator, is_no_op, no_op
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class Simplify(PrimFuncPass):
    """Simplify expressions and remove decided `if`s, using loop ranges, lets, conditions and
    `T.assume` facts; the same function comes back when nothing changes."""

    name: ClassVar[str] = "simplify"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=StmtSimplifier().visit(func.body))


def _read_buffers(expr: Node) -> set[E.Var]:
    return {n.buffer.data for n in post_order(expr) if isinstance(n, BufferLoad)}


def _written_buffers(stmt: Node) -> set[E.Var]:
    return {n.buffer.data for n in post_order(stmt) if isinstance(n, S.BufferStore)}


def _opaque_buffers(stmt: Node) -> set[E.Var]:
    """Data pointers passed to calls (`T.call_extern("f", A.data)`, `T.address_of(A[i])`): the
    callee may write through them."""
    passed: set[E.Var] = set()
    for node in post_order(stmt):
        if not isinstance(node, E.Call):
            continue
        for arg in node.args:
            if isinstance(arg, E.Var) and arg.dtype.is_handle:
                passed.add(arg)
            elif isinstance(arg, BufferLoad) and node.op is builtin.address_of_op:
                passed.add(arg.buffer.data)
    return passed


# What holds around a store inside a statement: the loops it runs in, the branch conditions.
_Context = tuple[S.For | E.PrimExpr, ...]


def _stores_in(stmt: Node, context: _Context = ()) -> Iterator[tuple[S.BufferStore, _Context]]:
    """Every store under `stmt`, with its enclosing loops and branch conditions (inside)."""
    if isinstance(stmt, S.BufferStore):
        yield stmt, context
    elif isinstance(stmt, S.For):
        yield from _stores_in(stmt.body, (*context, stmt))
    elif isinstance(stmt, S.IfThenElse) and not _read_buffers(stmt.condition):
        yield from _stores_in(stmt.then_case, (*context, stmt.condition))
        if stmt.else_case is not None:
            negated = builders.logical_not(stmt.condition)
            yield from _stores_in(stmt.else_case, (*context, negated))
    else:  # anything else: its stores, knowing only the loops and conditions around it
        for child in _children(stmt):
            yield from _stores_in(child, context)


def _children(stmt: Node) -> list[Node]:
    """The statements directly inside `stmt` (its stores, for a node of another kind)."""
    if isinstance(stmt, S.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, BlockRealize):
        return [stmt.block]
    if isinstance(stmt, Block):
        return [part for part in (stmt.init, stmt.body) if part is not None]
    body = getattr(stmt, "body", None)
    if isinstance(body, S.Stmt):
        return [body]
    return [n for n in post_order(stmt) if isinstance(n, S.BufferStore) and n is not stmt]


def _stores_itself(store: S.BufferStore) -> bool:
    """`A[i] = A[i]`: the value is a load of the very element stored (same view, no mask)."""
    load = store.value
    return (
        isinstance(load, BufferLoad)
        and load.buffer is store.buffer
        and store.predicate is None
        and load.predicate is None
        and len(load.indices) == len(store.indices)
        and all(map(structural_equal, load.indices, store.indices))
    )


def _is_pure_arithmetic(expr: E.PrimExpr) -> bool:
    return not any(isinstance(n, BufferLoad | E.Call) for n in post_order(expr))


class StmtSimplifier(NoOpDroppingMutator):
    """Walks statements with an Analyzer that knows the enclosing facts (see the module doc)."""

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        super().__init__()
        self.analyzer = analyzer or Analyzer()
        self._constraints: list[BufferConstraint] = []  # active buffer constraints and contents

    # ------------------------------------------------------------------ dispatch
    # Dispatch by method, not by overriding `visit`, so the Mutator walks the statements that
    # need no method here (declarations, attributes) with its explicit stack.
    def visit_Buffer(self, node: Buffer) -> Node:
        return node  # definitions, and buffer shapes, are not rewritten under local facts

    def visit_Var(self, node: E.Var) -> Node:
        return node

    def visit_Range(self, node: E.Range) -> Node:
        return node

    def visit_PrimExpr(self, node: E.PrimExpr) -> Node:
        return self.simplify(node)

    def simplify(self, expr: E.PrimExpr) -> E.PrimExpr:
        """`expr` simplified under the current facts (and the buffer constraints instantiated
        at its loads); the same object if nothing changed."""
        with ExitStack() as facts:
            for constraint in self._constraints:  # none active: no cost
                for fact in constraint.instances_for(expr, self.analyzer):
                    facts.enter_context(self.analyzer.constraint_scope(fact))
            new = self.analyzer.simplify(expr)
        if new is expr or structural_equal(new, expr):
            return expr
        return new

    @contextmanager
    def _fact(self, condition: E.PrimExpr | None) -> Iterator[None]:
        with self.analyzer.constraint_scope(condition) if condition is not None else nullcontext():
            yield

    # ------------------------------------------------------------------ statements
    def visit_For(self, loop: S.For) -> Node:
        min_, extent = self.simplify(loop.min), self.simplify(loop.extent)
        self.analyzer.bind(loop.loop_var, E.Range(min_, extent), allow_override=True)
        body = self.visit(loop.body)
        if body is not loop.body and is_no_op(body):  # emptied here (e.g. of self-stores)
            return no_op()
        return with_changes(loop, min=min_, extent=extent, body=body)

    def visit_LetStmt(self, let: S.LetStmt) -> Node:
        value = self.simplify(let.value)
        if _is_pure_arithmetic(value) and not value.dtype.is_vector:
            self.analyzer.bind(let.var, value, allow_override=True)
        return with_changes(let, value=value, body=self.visit(let.body))

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        condition = self.simplify(node.condition)
        if isinstance(condition, E.IntImm):
            taken = node.then_case if condition.value else node.else_case
            return no_op() if taken is None else self.visit(taken)
        reads = _read_buffers(condition)
        then_fact = condition if not reads & _written_buffers(node.then_case) else None
        with self._fact(then_fact):
            then_case = self._visit_stmt(node.then_case)
        else_case: S.Stmt | None = None
        if node.else_case is not None:
            else_fact = None
            if not reads & _written_buffers(node.else_case):
                else_fact = builders.logical_not(condition)
            with self._fact(else_fact):
                else_case = self._visit_stmt(node.else_case)
            if is_no_op(else_case):
                else_case = None
        if is_no_op(then_case) and else_case is None:
            return no_op()
        return with_changes(node, condition=condition, then_case=then_case, else_case=else_case)

    def visit_Evaluate(self, stmt: S.Evaluate) -> Node:
        if assumed_condition(stmt) is not None:
            return stmt  # a fact, not simplified by itself (RemoveAssume drops it later)
        return self.generic_visit(stmt)

    def visit_SeqStmt(self, seq: S.SeqStmt) -> Node:
        items = self._visit_items(list(seq.seq))
        if all(new is old for new, old in zip(items, seq.seq, strict=True)):
            return seq
        kept = [s for s in items if not is_no_op(s)]
        return S.SeqStmt.flatten(kept) if kept else no_op()

    def _visit_items(self, items: list[S.Stmt]) -> list[S.Stmt]:
        """Visit a sequence; an assumption is a fact for the items after it, up to the first one
        that writes a buffer the assumption reads."""
        for index, item in enumerate(items):
            condition = assumed_condition(item)
            assumption = constraint_of(item) if condition is None else None
            universal = assumption or (known_contents_of(item) if condition is None else None)
            if condition is None and universal is None:
                continue
            rest = items[index + 1 :]
            stated = universal.condition if universal is not None else condition
            assert stated is not None
            stop = next(
                (k for k, s in enumerate(rest) if self._may_change(stated, universal, s)),
                len(rest),
            )
            head = [self._visit_stmt(s) for s in items[:index]]
            if universal is not None:
                self._constraints.append(universal)
            try:
                with self._fact(condition):
                    covered = self._visit_items(rest[:stop])
            finally:
                if universal is not None:
                    self._constraints.pop()
            # An assumption is a fact, not simplified by itself; a store nest is code too.
            is_fact = condition is not None or assumption is not None
            kept = item if is_fact else self._visit_stmt(item)
            return [*head, kept, *covered, *self._visit_items(rest[stop:])]
        return [self._visit_stmt(s) for s in items]

    def _may_change(
        self, fact: E.PrimExpr, universal: BufferConstraint | None, stmt: S.Stmt
    ) -> bool:
        """True unless every store in `stmt` to a buffer the fact reads provably keeps it."""
        reads = _read_buffers(fact)
        if reads & _opaque_buffers(stmt):
            return True
        for store, context in _stores_in(stmt):
            if store.buffer.data not in reads:
                continue
            with ExitStack() as facts:
                for item in context:
                    if isinstance(item, S.For):
                        self.analyzer.bind(
                            item.loop_var, E.Range(item.min, item.extent), allow_override=True
                        )
                    else:
                        facts.enter_context(self.analyzer.constraint_scope(item))
                if not store_keeps(fact, universal, store, self.analyzer):
                    return True
        return False

    def visit_BufferStore(self, store: S.BufferStore) -> Node:
        new = self.generic_visit(store)
        assert isinstance(new, S.BufferStore)
        return no_op() if _stores_itself(new) else new

    def _visit_stmt(self, stmt: S.Stmt) -> S.Stmt:
        new = self.visit(stmt)
        assert isinstance(new, S.Stmt)
        return new
