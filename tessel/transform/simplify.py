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

The fact still holds where the statement that may change it starts (TVM's
propagate_knowns_to_prove_conditional): an `if`'s condition is read before its branches write,
so `T.assume(A[0] == 0)` decides a following `if A[0] == 0: A[0] = 42`, and the fact holds at
the start of each branch. A loop whose every store to the buffer has the loop variable as one
index writes only its own element in each iteration, so a fact about every element holds for
the element of the running iteration until that iteration writes it (`for i: if A[i] == 0:
A[i] = 17` after `T.assume(A[i] == 0)` over all i). `for i: if p: T.assume(c)` states
`not p or c` over the loop, so the fact applies only where `p` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
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


def _fact_of(
    item: S.Stmt,
) -> tuple[E.PrimExpr | None, BufferConstraint | None, bool]:
    """(assumed condition, universal fact, whether the item is only a fact) of a statement: a
    `T.assume`, a nest of loops around one (maybe under an `if`), or a nest storing known
    contents; (None, None, False) for other statements."""
    condition = assumed_condition(item)
    if condition is not None:
        return condition, None, True
    assumption = constraint_of(item) or _guarded_constraint(item)
    if assumption is not None:
        return None, assumption, True
    contents = known_contents_of(item)
    return None, contents, False


def _guarded_constraint(stmt: S.Stmt) -> BufferConstraint | None:
    """`for v...: if p: T.assume(c)`, p pure: `not p or c` at every point of the loops."""
    loops: list[S.For] = []
    while isinstance(stmt, S.For):
        loops.append(stmt)
        stmt = stmt.body
    if not loops or not isinstance(stmt, S.IfThenElse) or stmt.else_case is not None:
        return None
    condition = assumed_condition(stmt.then_case)
    if condition is None or not _is_pure_arithmetic(stmt.condition):
        return None
    stated = builders.logical_or(builders.logical_not(stmt.condition), condition)
    ranges = tuple(E.Range(loop.min, loop.extent) for loop in loops)
    return BufferConstraint(tuple(loop.loop_var for loop in loops), ranges, stated)


def _per_iteration(universal: BufferConstraint, loop: S.For) -> BufferConstraint | None:
    """What of `universal` still holds at the start of each iteration of `loop`, when every
    store the loop makes to the buffer the fact reads has the loop variable as one index:
    earlier iterations wrote other elements, so the fact holds where that index is the
    loop variable (`v_p != i or condition`, over fresh variables). None otherwise."""
    loads = [n for n in post_order(universal.condition) if isinstance(n, BufferLoad)]
    if not loads or any(
        n.buffer is not loads[0].buffer or not structural_equal(n, loads[0]) for n in loads
    ):
        return None
    buffer, var = loads[0].buffer, loop.loop_var
    if buffer.data in _opaque_buffers(loop.body):
        return None
    positions = set(range(len(buffer.shape)))
    for store, _ in _stores_in(loop.body):
        if store.buffer.data is not buffer.data:
            continue
        if store.buffer is not buffer or store.predicate is not None:
            return None  # another view of the memory, or a masked store: no element reasoning
        positions &= {p for p, index in enumerate(store.indices) if index is var}
    pattern_indices = loads[0].indices
    positions = {p for p in positions if pattern_indices[p].dtype == var.dtype}
    if not positions:
        return None
    fresh = {v: E.Var(v.name, v.dtype) for v in universal.vars}
    guard = builders.ne(substitute(pattern_indices[min(positions)], fresh), var)
    stated = builders.logical_or(guard, substitute(universal.condition, fresh))
    ranges = tuple(
        E.Range(substitute(r.min, fresh), substitute(r.extent, fresh)) for r in universal.ranges
    )
    return BufferConstraint(tuple(fresh.values()), ranges, stated)


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
        return self._visit_loop(loop, self._visit_stmt)

    def _visit_loop(self, loop: S.For, visit_body: Callable[[S.Stmt], S.Stmt]) -> S.Stmt:
        """The loop with simplified bounds, its variable's range known to `visit_body`."""
        min_, extent = self.simplify(loop.min), self.simplify(loop.extent)
        self.analyzer.bind(loop.loop_var, E.Range(min_, extent), allow_override=True)
        body = visit_body(loop.body)
        if body is not loop.body and is_no_op(body):  # emptied here (e.g. of self-stores)
            return no_op()
        return with_changes(loop, min=min_, extent=extent, body=body)

    def visit_LetStmt(self, let: S.LetStmt) -> Node:
        value = self.simplify(let.value)
        if _is_pure_arithmetic(value) and not value.dtype.is_vector:
            self.analyzer.bind(let.var, value, allow_override=True)
        return with_changes(let, value=value, body=self.visit(let.body))

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        return self._visit_if(node, self.simplify(node.condition), self._visit_stmt)

    def _visit_if(
        self, node: S.IfThenElse, condition: E.PrimExpr, visit_branch: Callable[[S.Stmt], S.Stmt]
    ) -> S.Stmt:
        """The `if` with `condition` (already simplified): the branch that runs when it is
        decided, else both branches, each visited by `visit_branch` knowing its condition."""
        if isinstance(condition, E.IntImm):
            taken = node.then_case if condition.value else node.else_case
            return no_op() if taken is None else visit_branch(taken)
        reads = _read_buffers(condition)
        then_fact = condition if not reads & _written_buffers(node.then_case) else None
        with self._fact(then_fact):
            then_case = visit_branch(node.then_case)
        else_case: S.Stmt | None = None
        if node.else_case is not None:
            else_fact = None
            if not reads & _written_buffers(node.else_case):
                else_fact = builders.logical_not(condition)
            with self._fact(else_fact):
                else_case = visit_branch(node.else_case)
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
        that writes a buffer the assumption reads, and at the start of that one."""
        for index, item in enumerate(items):
            condition, universal, is_fact = _fact_of(item)
            if condition is None and universal is None:
                continue
            head = [self._visit_stmt(s) for s in items[:index]]
            rest = self._visit_under(condition, universal, items[index + 1 :])
            # An assumption is a fact, not simplified by itself; a store nest is code too.
            kept = item if is_fact else self._visit_stmt(item)
            return [*head, kept, *rest]
        return [self._visit_stmt(s) for s in items]

    def _visit_under(
        self,
        condition: E.PrimExpr | None,
        universal: BufferConstraint | None,
        items: list[S.Stmt],
    ) -> list[S.Stmt]:
        """Visit `items`, the fact (`condition`, or `universal` at every point of its box)
        holding where they start: up to the first item that may make it false, and where
        that item starts (an `if`'s condition is read before its branch writes)."""
        stated = universal.condition if universal is not None else condition
        assert stated is not None
        stop = next(
            (k for k, s in enumerate(items) if self._may_change(stated, universal, s)), len(items)
        )
        with self._holding(condition, universal):
            covered = self._visit_items(items[:stop])
        if stop == len(items):
            return covered
        stopper = items[stop]
        stopper_condition, stopper_universal, _ = _fact_of(stopper)
        if stopper_condition is not None or stopper_universal is not None:
            return [*covered, *self._visit_items(items[stop:])]
        entered = self._enter(stopper, condition, universal)
        return [*covered, entered, *self._visit_items(items[stop + 1 :])]

    def _enter(
        self, stmt: S.Stmt, condition: E.PrimExpr | None, universal: BufferConstraint | None
    ) -> S.Stmt:
        """`stmt` visited knowing the fact holds where it starts (it may change it later)."""
        if isinstance(stmt, S.IfThenElse) and not _opaque_buffers(stmt.condition):
            with self._holding(condition, universal):
                decided = self.simplify(stmt.condition)
            return self._visit_if(
                stmt, decided, lambda branch: self._enter_block(branch, condition, universal)
            )
        if isinstance(stmt, S.For) and universal is not None:
            per_iteration = _per_iteration(universal, stmt)
            if per_iteration is not None:
                return self._visit_loop(
                    stmt, lambda body: self._enter_block(body, None, per_iteration)
                )
        return self._visit_stmt(stmt)

    def _enter_block(
        self, stmt: S.Stmt, condition: E.PrimExpr | None, universal: BufferConstraint | None
    ) -> S.Stmt:
        """A statement or sequence visited with the fact holding where it starts."""
        items = list(stmt.seq) if isinstance(stmt, S.SeqStmt) else [stmt]
        new = self._visit_under(condition, universal, items)
        if len(new) == len(items) and all(a is b for a, b in zip(new, items, strict=True)):
            return stmt
        kept = [s for s in new if not is_no_op(s)]
        return S.SeqStmt.flatten(kept) if kept else no_op()

    @contextmanager
    def _holding(
        self, condition: E.PrimExpr | None, universal: BufferConstraint | None
    ) -> Iterator[None]:
        """Within the block, the fact is known (a condition, or a constraint at each load)."""
        if universal is not None:
            self._constraints.append(universal)
        try:
            with self._fact(condition):
                yield
        finally:
            if universal is not None:
                self._constraints.pop()

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
