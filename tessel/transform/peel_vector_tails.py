"""PeelVectorTails: a loop whose vector accesses are predicated only in its last iterations runs as
two loops, first the iterations in which every lane is enabled, with no predicate, then the
others, predicated as VectorizeLoop left them.

A row of 197 floats in vectors of 16 is 12 whole vectors and a partial one: VectorizeLoop
predicates each access of the row loop on `Ramp(i * 16, 1, 16) < 197`, and code generation tests
the last lane before each access (a plain copy or a masked one). The branch costs little by
itself, but a masked store in the loop keeps the C compiler from holding a reduction's vector of
partial results in a register: softmax's max and sum loaded and stored theirs at every step,
and a softmax over 197 keys (ViT) took 1.7x the time of one over 192. After the peel the first
loop's accesses are plain, and only the last iteration is masked.

A conjunct of a predicate is peeled when it is `Ramp(b, s, n) < x` (or `<=`) with s >= 0 whose
last lane, b + s * (n - 1), is a * i + c in the loop variable i (a > 0; a, c and x constants): it
holds for a prefix of the iterations, and fails from some iteration on. The first loop runs the
shortest such prefix and drops those conjuncts from its copy of the body (the other conjuncts
stay); a tail of one iteration is that iteration's body, without a loop (its constants
folded). Nothing is peeled where the prefix is empty or the whole loop, nor in loops that run
in parallel. A loop of a run-time extent (a row of a shape symbol's length, which VectorizeLoop
cuts into vectors under a loop of `(seq + 15) // 16` chunks) whose predicate compares with a
run-time bound peels the same way, its counts expressions: the head runs `max(min(extent,
whole), 0)` iterations, the tail the rest, each a loop. TVM's LoopPartition does this for `likely`
conditions; here the conditions are the vector predicates themselves.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import Mutator, mentions, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.unswitch_guards import renew_definitions

# Loop kinds whose iterations run in order, one thread: the ones a peel may split.
_SERIAL = (S.ForKind.SERIAL, S.ForKind.UNROLLED)


class PeelVectorTails(PrimFuncPass):
    """Split each serial loop whose vector predicates fail only in its last iterations into an
    unpredicated loop over the whole vectors and a predicated one over the rest."""

    name: ClassVar[str] = "peel_vector_tails"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        if not _predicate_conjuncts(func.body):  # most kernels: one walk, nothing to peel
            return func
        body = _Peeler().visit(func.body)
        return func if body is func.body else with_changes(func, body=body)


class _Peeler(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.analyzer = Analyzer()

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)  # inner loops first
        assert isinstance(visited, S.For)
        if visited.kind not in _SERIAL:
            return visited
        start, extent = visited.min, visited.extent
        if isinstance(start, E.IntImm) and not isinstance(extent, E.IntImm):
            return self._peel_symbolic(visited)
        if not (isinstance(start, E.IntImm) and isinstance(extent, E.IntImm)):
            return visited
        whole, peeled = self._whole_iterations(visited)
        if not 0 < whole < extent.value:
            return visited
        var = visited.loop_var
        plain = _Unpredicated(peeled).visit(visited.body)
        head = with_changes(visited, extent=builders.const(whole, extent.dtype), body=plain)
        # The tail's copy defines its own loop, let and allocation variables (each is defined
        # once in a function); a tail of one iteration is its body, at that iteration.
        rest = builders.const(start.value + whole, start.dtype)
        if extent.value - whole == 1:
            last = _ConstantFolder(self.analyzer).visit(substitute(visited.body, {var: rest}))
            return S.SeqStmt((head, renew_definitions(last)))
        tail_var = E.Var(var.name, var.dtype, var.type_annotation)
        tail_body = renew_definitions(substitute(visited.body, {var: tail_var}))
        tail = with_changes(
            visited,
            loop_var=tail_var,
            min=rest,
            extent=builders.const(extent.value - whole, extent.dtype),
            body=tail_body,
        )
        return S.SeqStmt((head, tail))

    def _peel_symbolic(self, loop: S.For) -> S.Stmt:
        """`loop` of a run-time extent (a row of a shape symbol's length, in vectors) as the
        loop over its whole vectors, unpredicated, then the loop over the rest: the counts are
        expressions, and both loops stay loops (either may run no iteration)."""
        inner = {
            id(n.loop_var if isinstance(n, S.For) else n.var)
            for n in post_order(loop.body)
            if isinstance(n, S.For | S.LetStmt)
        }
        start, extent = loop.min, loop.extent
        counts: list[E.PrimExpr] = []
        peeled: set[int] = set()
        for conjunct in _predicate_conjuncts(loop.body):
            line = _peelable(conjunct, loop.loop_var, self.analyzer)
            if line is None or any(
                isinstance(n, BufferLoad | E.Call) or (isinstance(n, E.Var) and id(n) in inner)
                for n in post_order(line[2])
            ):
                continue
            slope, offset, bound, inclusive = line
            room = bound - (offset + slope * start.value)  # type: ignore[attr-defined]
            count = (
                builders.floordiv(room, slope) + 1
                if inclusive
                else builders.floordiv(room + (slope - 1), slope)
            )
            counts.append(count)
            peeled.add(id(conjunct))
        if not counts:
            return loop
        whole = extent
        for count in counts:
            whole = builders.min_value(whole, count)
        whole = self.analyzer.simplify(builders.max_value(whole, builders.const(0, extent.dtype)))
        var = loop.loop_var
        head = with_changes(loop, extent=whole, body=_Unpredicated(peeled).visit(loop.body))
        tail_var = E.Var(var.name, var.dtype, var.type_annotation)
        tail = with_changes(
            loop,
            loop_var=tail_var,
            min=self.analyzer.simplify(start + whole),
            extent=self.analyzer.simplify(extent - whole),
            body=renew_definitions(substitute(loop.body, {var: tail_var})),
        )
        return S.SeqStmt((head, tail))

    def _whole_iterations(self, loop: S.For) -> tuple[int, set[int]]:
        """How many first iterations of `loop` enable every lane of its peelable conjuncts (0
        when it has none), and those conjuncts (by id)."""
        whole: int | None = None
        peeled: set[int] = set()
        for conjunct in _predicate_conjuncts(loop.body):
            line = _peelable(conjunct, loop.loop_var, self.analyzer)
            if line is None or not isinstance(line[2], int):
                continue
            slope, offset, bound, inclusive = line
            # a * (start + t) + c < x  <=>  t < (x - c - a * start) / a
            room = bound - offset - slope * loop.min.value  # type: ignore[attr-defined]
            count = room // slope + 1 if inclusive else -(-room // slope)
            count = max(0, min(count, loop.extent.value))  # type: ignore[attr-defined]
            whole = count if whole is None else min(whole, count)
            peeled.add(id(conjunct))
        return whole or 0, peeled


def _predicate_conjuncts(body: S.Stmt) -> list[E.PrimExpr]:
    """The conjuncts of the predicates of the vector loads and stores in `body`."""
    parts: list[E.PrimExpr] = []
    for node in post_order(body):
        if isinstance(node, BufferLoad | S.BufferStore) and node.predicate is not None:
            parts.extend(builders.conjuncts(node.predicate))
    return parts


def _peelable(
    conjunct: E.PrimExpr, var: E.Var, analyzer: Analyzer
) -> tuple[int, int, Any, bool] | None:
    """For `Ramp(b, s, n) < Broadcast(x)` (or `<=`), s >= 0, whose last lane is a * var + c
    with a > 0 and a, c constants: (a, c, x, whether `<=`), x an int where it is a constant,
    else an expression without `var`; else None."""
    if not isinstance(conjunct, E.LT | E.LE) or not mentions(conjunct, var):
        return None
    ramp, bound = conjunct.a, conjunct.b
    if not isinstance(ramp, E.Ramp) or not isinstance(bound, E.Broadcast):
        return None
    if not isinstance(ramp.stride, E.IntImm) or ramp.stride.value < 0:
        return None
    limit = analyzer.simplify(bound.value)
    if not isinstance(limit, E.IntImm) and (limit.dtype.is_vector or mentions(limit, var)):
        return None
    last = analyzer.simplify(ramp.base + (ramp.lanes - 1) * ramp.stride.value)
    offset = analyzer.simplify(substitute(last, {var: builders.const(0, var.dtype)}))
    at_one = analyzer.simplify(substitute(last, {var: builders.const(1, var.dtype)}))
    if not (isinstance(offset, E.IntImm) and isinstance(at_one, E.IntImm)):
        return None
    slope = at_one.value - offset.value
    if slope <= 0:
        return None
    straight = analyzer.simplify(last - (var * slope + offset.value))
    if not builders.is_const_int(straight, 0):
        return None
    value = limit.value if isinstance(limit, E.IntImm) else limit
    return slope, offset.value, value, isinstance(conjunct, E.LE)


class _Unpredicated(Mutator):
    """The body of the first loop: the conjuncts `_whole_iterations` peeled (`peeled`, their
    ids) dropped from every predicate (they hold in each of its iterations)."""

    def __init__(self, peeled: set[int]) -> None:
        super().__init__()
        self.peeled = peeled

    def _kept(self, predicate: E.PrimExpr | None) -> tuple[bool, E.PrimExpr | None]:
        if predicate is None:
            return False, None
        parts = builders.conjuncts(predicate)
        kept = [p for p in parts if id(p) not in self.peeled]
        if len(kept) == len(parts):
            return False, predicate
        return True, builders.conjunction(kept) if kept else None

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        visited = self.generic_visit(load)
        assert isinstance(visited, BufferLoad)
        changed, predicate = self._kept(visited.predicate)
        return with_changes(visited, predicate=predicate) if changed else visited

    def visit_BufferStore(self, store: S.BufferStore) -> Node:
        visited = self.generic_visit(store)
        assert isinstance(visited, S.BufferStore)
        changed, predicate = self._kept(visited.predicate)
        return with_changes(visited, predicate=predicate) if changed else visited


class _ConstantFolder(Mutator):
    """Integer arithmetic on constants folded (`15 * 8` -> 120), as the parser folds it: the
    tail's copy, at its one iteration, prints and parses back as it is."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit_BinaryOp(self, node: E.BinaryOp) -> Node:
        visited = self.generic_visit(node)
        assert isinstance(visited, E.BinaryOp)
        if isinstance(visited.a, E.IntImm) and isinstance(visited.b, E.IntImm):
            folded = self.analyzer.simplify(visited)
            if isinstance(folded, E.IntImm):
                return folded
        return visited
