"""UnswitchGuards: test a tile's bounds once, outside its loops, instead of in every iteration.

A split that does not divide its loop leaves a guard (`T.where(i_o * 8 + i_i < 127)`, an `if`
once blocks are lowered) on every iteration of the tile's inner loops; inside a vectorized loop
it becomes a mask on every access, which also keeps the C compiler from holding accumulators in
registers (a 127³ matmul ran 11x slower than a 128³ one). For a loop L and a guard nested in
loops inside L's body, the pass computes the condition under which the guard holds for *every*
iteration of those inner loops (the maximum of `i_o * 8 + i_i` over `i_i` is `i_o * 8 + 7`, so
`i_o * 8 + 7 < 127`), and splits L's body on it: where it holds, a copy without the guard; else
the original body, in which the inner loops may split again. A guard with no inner variable is
thereby hoisted out of the loops it is invariant in, and in the copy where it fails, it is
false and its statement is removed.

TVM reaches the same code by two passes, LoopPartition (splitting a loop's range where a
`likely` condition is decided) and HoistIfThenElse; a test on the tile is simpler, and works on
fused tile loops (`fused // 4 * 8 + i_i < 127`) whose range no single split point partitions.

Each loop body is split on at most MAX_CONDITIONS conditions (2**MAX_CONDITIONS copies), and
only guards of the shape `a < b` (`<=`, `>`, `>=`) over integer loop variables are considered;
the analyzer's symbolic bounds (int_set) may only over-approximate a maximum, which makes the
condition stronger: the guard-free copy is still only run where every guard holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.no_op import NoOpDroppingMutator, is_no_op, no_op
from tessel.transform.prim_func_pass import PrimFuncPass

# Conditions one loop body is split on: the rows and the columns of a 2-D tile.
MAX_CONDITIONS = 2

_COMPARISONS = (E.LT, E.LE, E.GT, E.GE)


@dataclass(frozen=True)
class UnswitchGuards(PrimFuncPass):
    """Split loop bodies on the condition that their inner loops' guards all hold."""

    name: ClassVar[str] = "unswitch_guards"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Unswitcher().visit(func.body))


@dataclass(frozen=True, slots=True)
class _Guard:
    """One conjunct of a guard, and what it takes for it to hold over the inner loops."""

    key: tuple[int, int]  # (id of the `if`, position of the conjunct)
    holds_everywhere: E.PrimExpr
    invariant: bool  # mentions no inner loop variable: where the condition fails, it is false


class _Unswitcher(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.analyzer = Analyzer()

    def visit_For(self, loop: S.For) -> Node:
        # Loop variables are defined once (copies get fresh ones), so a binding never goes stale.
        self.analyzer.bind(loop.loop_var, E.Range(loop.min, loop.extent), allow_override=True)
        return with_changes(loop, body=self._split(loop.body))

    def visit_LetStmt(self, let: S.LetStmt) -> Node:
        self._bind_let(let)
        return self.generic_visit(let)

    def _bind_let(self, let: S.LetStmt) -> None:
        """Let the analyzer know an integer let's value (pure arithmetic only)."""
        if let.var.dtype.is_int and not let.var.dtype.is_vector and _is_pure(let.value):
            self.analyzer.bind(let.var, let.value, allow_override=True)

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        then_case = self._under(node.condition, node.then_case)
        else_case = None
        if node.else_case is not None:
            else_case = self._under(builders.logical_not(node.condition), node.else_case)
        if then_case is node.then_case and else_case is node.else_case:
            return node
        return S.IfThenElse(node.condition, then_case, else_case, span=node.span)

    def _under(self, fact: E.PrimExpr, stmt: S.Stmt) -> S.Stmt:
        with self.analyzer.constraint_scope(fact):
            return self.visit(stmt)

    def _split(self, body: S.Stmt) -> S.Stmt:
        """`body`, split on the conditions of up to MAX_CONDITIONS of its guards, and visited."""
        # Allocations and lets stay outside the split: one definition, not one per copy.
        if isinstance(body, S.Allocate | S.DeclBuffer | S.AttrStmt):
            return with_changes(body, body=self._split(body.body))
        if isinstance(body, S.LetStmt):
            self._bind_let(body)
            return with_changes(body, body=self._split(body.body))
        conditions = self._conditions(body)
        return self._branches(body, conditions, {})

    def _branches(
        self,
        body: S.Stmt,
        conditions: list[list[_Guard]],
        decided: dict[tuple[int, int], bool],
        first: bool = True,
    ) -> S.Stmt:
        """`body` split on each of `conditions` in turn, its guards decided in each copy (all
        but the `first` with fresh loop and let variables: each is defined once)."""
        if not conditions:
            copy = _replace(body, decided)
            return self.visit(copy if first else renew_definitions(copy))
        group, rest = conditions[0], conditions[1:]
        condition = group[0].holds_everywhere
        everywhere = decided | {g.key: True for g in group}
        failing = decided | {g.key: False for g in group if g.invariant}
        # An earlier condition can decide this one: no copy for the side that never runs (gcc
        # 12 -O3 let the stores of such a dead copy change results: fuzz seed 21, case 1933).
        if self.analyzer.can_prove(condition):
            return self._branches(body, rest, everywhere, first)
        if self.analyzer.can_prove(builders.logical_not(condition)):
            return self._branches(body, rest, failing, first)
        with self.analyzer.constraint_scope(condition):
            then_case = self._branches(body, rest, everywhere, first)
        with self.analyzer.constraint_scope(builders.logical_not(condition)):
            else_case = self._branches(body, rest, failing, first=False)
        if is_no_op(else_case):  # every guard of the body fails where the condition does
            return then_case if is_no_op(then_case) else S.IfThenElse(condition, then_case)
        return S.IfThenElse(condition, then_case, else_case)

    def _conditions(self, body: S.Stmt) -> list[list[_Guard]]:
        """The guards of `body` nested in its loops, grouped by the condition that makes them
        hold everywhere: the first MAX_CONDITIONS groups the analyzer cannot decide."""
        groups: list[list[_Guard]] = []
        for guard in self._guards(body):
            condition = guard.holds_everywhere
            if self.analyzer.can_prove(condition) or self.analyzer.can_prove(
                builders.logical_not(condition)
            ):
                continue
            for group in groups:
                if structural_equal(group[0].holds_everywhere, condition):
                    group.append(guard)
                    break
            else:
                if len(groups) < MAX_CONDITIONS:
                    groups.append([guard])
        return groups

    def _guards(self, body: S.Stmt) -> Iterator[_Guard]:  # noqa: C901 - the walk below is its body
        """Each conjunct of an `if` (without else) under at least one loop of `body`."""
        inner: dict[E.Var, E.Range] = {}
        local: set[E.Var] = set()  # lets inside `body`: not known at the split

        def walk(stmt: S.Stmt, loops: tuple[S.For, ...]) -> Iterator[_Guard]:  # noqa: C901 - one case per statement kind
            if isinstance(stmt, S.For):
                inner[stmt.loop_var] = E.Range(stmt.min, stmt.extent)
                yield from walk(stmt.body, (*loops, stmt))
            elif isinstance(stmt, S.IfThenElse):
                if stmt.else_case is None and loops:
                    for position, conjunct in enumerate(builders.conjuncts(stmt.condition)):
                        if _lane_bound(conjunct, loops):
                            continue
                        guard = self._guard((id(stmt), position), conjunct, inner, local)
                        if guard is not None:
                            yield guard
                yield from walk(stmt.then_case, loops)
                if stmt.else_case is not None:
                    yield from walk(stmt.else_case, loops)
            elif isinstance(stmt, S.SeqStmt):
                for item in stmt.seq:
                    yield from walk(item, loops)
            elif isinstance(stmt, S.LetStmt):
                local.add(stmt.var)
                yield from walk(stmt.body, loops)
            elif isinstance(stmt, S.Allocate | S.DeclBuffer | S.AttrStmt):
                yield from walk(stmt.body, loops)

        yield from walk(body, ())

    def _guard(
        self,
        key: tuple[int, int],
        conjunct: E.PrimExpr,
        inner: dict[E.Var, E.Range],
        local: set[E.Var],
    ) -> _Guard | None:
        """The guard for `conjunct` if it compares integers over loop variables and known
        values; its condition to hold for every value of the inner loop variables."""
        if not isinstance(conjunct, _COMPARISONS) or not conjunct.a.dtype.is_int:
            return None
        if conjunct.a.dtype.is_vector:
            return None
        variables = {n for n in post_order(conjunct) if isinstance(n, E.Var)}
        if variables & local or not _is_pure(conjunct):
            return None
        dom = {v: r for v, r in inner.items() if v in variables}
        # `a < b` holds everywhere iff max(a - b) < 0 (and so on for the other comparisons).
        if isinstance(conjunct, E.LT | E.LE):
            difference = builders.sub(conjunct.a, conjunct.b)
        else:
            difference = builders.sub(conjunct.b, conjunct.a)
        if not dom:
            return _Guard(key, conjunct, invariant=True)
        largest = self.analyzer.int_set(difference, dom).max_value
        if largest is None or any(n in dom for n in post_order(largest) if isinstance(n, E.Var)):
            return None
        zero = builders.const(0, difference.dtype)
        strict = isinstance(conjunct, E.LT | E.GT)
        condition = builders.lt(largest, zero) if strict else builders.le(largest, zero)
        return _Guard(key, self.analyzer.simplify(condition), invariant=False)


def _lane_bound(conjunct: E.PrimExpr, loops: tuple[S.For, ...]) -> bool:
    """True for a guard of the lanes of vectorized loops, under no other loop: the vector's
    predicate, which code generation tests on its last lane (one scalar branch) already."""
    variables = {n for n in post_order(conjunct) if isinstance(n, E.Var)}
    vectorized = all(loop.kind is S.ForKind.VECTORIZED for loop in loops)
    return vectorized and any(loop.loop_var in variables for loop in loops)


def _is_pure(expr: E.PrimExpr) -> bool:
    """No buffer reads and no calls: its value depends only on variables."""
    return not any(isinstance(n, BufferLoad | E.Call) for n in post_order(expr))


def renew_definitions(body: S.Stmt) -> S.Stmt:
    """`body` with new variables for the loops, lets and allocations it defines: a variable is
    defined once in a function (StorageRewrite keys allocations by theirs: two copies of one
    allocation under one variable once shared memory that only one of them could spare)."""
    defined = [
        _defined_var(n) for n in post_order(body) if isinstance(n, S.For | S.LetStmt | S.Allocate)
    ]
    return substitute(body, {v: E.Var(v.name, v.dtype, v.type_annotation) for v in defined})


def _defined_var(node: S.For | S.LetStmt | S.Allocate) -> E.Var:
    if isinstance(node, S.For):
        return node.loop_var
    return node.var if isinstance(node, S.LetStmt) else node.buffer_var


def _replace(body: S.Stmt, decided: dict[tuple[int, int], bool]) -> S.Stmt:
    """`body` with the conjuncts in `decided` replaced by their values (an `if` left always
    false is removed, one always true replaced by its statement)."""
    if not decided:
        return body
    return _ConjunctReplacer(decided).visit(body)


class _ConjunctReplacer(NoOpDroppingMutator):
    def __init__(self, decided: dict[tuple[int, int], bool]) -> None:
        super().__init__()
        self.decided = decided

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, S.IfThenElse)
        if node.else_case is not None:
            return visited
        kept = []
        for position, conjunct in enumerate(builders.conjuncts(node.condition)):
            value = self.decided.get((id(node), position))
            if value is False:
                return no_op()
            if value is None:
                kept.append(conjunct)
        if len(kept) == len(builders.conjuncts(node.condition)):
            return visited
        if not kept:
            return visited.then_case
        return with_changes(visited, condition=builders.conjunction(kept))
