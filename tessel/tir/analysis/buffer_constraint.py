"""Buffer constraints and known buffer contents, instantiated where the buffer is read.

A buffer constraint (DESIGN.md section 5: a block of `T.assume(not padding or A[v] == pad)`, or
its lowered loop nest) states its condition at every point of its variables' ranges; a nest that
stores a pure value into a whole box states the same kind of fact about what the buffer holds.
Such a universal fact reaches the analyzer as instances: at each load `A[e...]`, the condition
with the variables replaced by the load's indices, guarded by `not in_ranges` unless the indices
are provably inside. An instance is in clause form (negations at the comparisons, an `and` of
right-nested `or`s with the buffer reads last): the analyzer brings a disjunction into force
disjunct by disjunct as its facts refute the ones in front.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tessel.arith import Analyzer
from tessel.arith.facts import negate
from tessel.ir import builders
from tessel.ir.expr import And, Call, Not, Or, PrimExpr, Range, Select, Var
from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.ir.structural import expr_hash, same_expr
from tessel.ir.substitute import substitute
from tessel.tir import builtin
from tessel.tir.block import BlockRealize
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore, Evaluate, For, Stmt

_MAX_CLAUSES = 32  # beyond this an `or` of `and`s stays one literal (clause form is exponential)


@dataclass(frozen=True)
class BufferConstraint:
    """`condition` holds at every point of `vars` within `ranges` (a buffer constraint, or known
    buffer contents)."""

    vars: tuple[Var, ...]
    ranges: tuple[Range, ...]
    condition: PrimExpr

    def instances_for(self, expr: PrimExpr | Stmt, analyzer: Analyzer) -> list[PrimExpr]:
        """The condition at every load in `expr` that it speaks about, deduplicated."""
        instances: list[PrimExpr] = []
        buckets: dict[int, list[PrimExpr]] = {}
        memo: dict[int, tuple[object, int]] = {}
        for load in post_order(expr):
            if not isinstance(load, BufferLoad) or load.buffer not in self._patterns:
                continue
            for pattern in self._patterns[load.buffer]:
                mapping = self._mapping(pattern, load)
                if mapping is None:
                    continue
                instance = self._instance(mapping, analyzer)
                bucket = buckets.setdefault(expr_hash(instance, memo), [])
                if not any(same_expr(instance, seen) for seen in bucket):
                    bucket.append(instance)
                    instances.append(instance)
        return instances

    @cached_property
    def _patterns(self) -> dict[object, list[BufferLoad]]:
        """The loads of the condition indexed by every constraint variable once, by buffer."""
        patterns: dict[object, list[BufferLoad]] = {}
        for node in post_order(self.condition):
            if isinstance(node, BufferLoad) and self._is_pattern(node):
                patterns.setdefault(node.buffer, []).append(node)
        return patterns

    def _is_pattern(self, load: BufferLoad) -> bool:
        indexed = [index for index in load.indices if index in self.vars]
        invariant = [index for index in load.indices if index not in self.vars]
        return (
            len(indexed) == len(set(indexed)) == len(self.vars)
            and load.predicate is None
            and not any(_mentions(index, self.vars) for index in invariant)
        )

    def _mapping(self, pattern: BufferLoad, load: BufferLoad) -> dict[Var, PrimExpr] | None:
        """Constraint variable -> the load's index, if `load` reads where `pattern` does."""
        if load.predicate is not None or load.dtype.is_vector:
            return None
        mapping: dict[Var, PrimExpr] = {}
        for wanted, index in zip(pattern.indices, load.indices, strict=True):
            if isinstance(wanted, Var) and wanted in self.vars:
                if wanted.dtype != index.dtype:
                    return None
                mapping[wanted] = index
            elif not same_expr(wanted, index):
                return None
        return mapping

    def _instance(self, mapping: dict[Var, PrimExpr], analyzer: Analyzer) -> PrimExpr:
        """The condition at `mapping`, guarded by the range bounds the analyzer cannot prove."""
        guards = []
        for var, rng in zip(self.vars, self.ranges, strict=True):
            lo, extent = substitute(rng.min, mapping), substitute(rng.extent, mapping)
            index = mapping[var]
            for bound in (builders.le(lo, index), builders.lt(index, builders.add(lo, extent))):
                if not analyzer.can_prove(bound):
                    guards.append(negate(bound))
        clauses = _clauses(substitute(self.condition, mapping))
        instance: PrimExpr = builders.const(True)
        for clause in reversed(clauses):
            instance = builders.logical_and(_disjunction([*guards, *clause]), instance)
        return instance


def assumed_condition(stmt: Stmt) -> PrimExpr | None:
    """The condition of a `T.evaluate(T.assume(cond))` statement, else None."""
    if isinstance(stmt, Evaluate):
        value = stmt.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            return value.args[0]
    return None


def constraint_of(stmt: Stmt) -> BufferConstraint | None:
    """The buffer constraint a nest of loops around one `T.assume` (lowered, or in a block)
    states, else None."""
    loops, body = _loop_nest(stmt)
    if isinstance(body, BlockRealize):
        return _block_constraint(body, loops)
    condition = assumed_condition(body)
    if not loops or condition is None:
        return None
    ranges = tuple(Range(loop.min, loop.extent) for loop in loops)
    return BufferConstraint(tuple(loop.loop_var for loop in loops), ranges, condition)


def _block_constraint(realize: BlockRealize, loops: list[For]) -> BufferConstraint | None:
    """The assumption of a block over its iterators' domains; a `T.where` predicate over loop
    variables bound one to one to iterators becomes a guard of the condition."""
    block = realize.block
    condition = assumed_condition(block.body)
    if condition is None or not block.iter_vars:
        return None
    if not builders.is_const_int(realize.predicate, 1):
        iterators = {
            value: iv.var
            for value, iv in zip(realize.iter_values, block.iter_vars, strict=True)
            if isinstance(value, Var)
        }
        predicate = substitute(realize.predicate, iterators)
        if _mentions(predicate, tuple(loop.loop_var for loop in loops)):
            return None  # the predicate needs a loop variable no iterator stands for
        condition = builders.logical_or(builders.logical_not(predicate), condition)
    iter_vars = tuple(iv.var for iv in block.iter_vars)
    return BufferConstraint(iter_vars, tuple(iv.dom for iv in block.iter_vars), condition)


def known_contents_of(stmt: Stmt) -> BufferConstraint | None:
    """What a nest of constant loops storing a pure value (or a padding `if_then_else` whose
    padding value is pure) into a whole box of a buffer leaves there, else None."""
    loops, body = _loop_nest(stmt)
    if not loops or not isinstance(body, BufferStore) or body.predicate is not None:
        return None
    loop_vars = tuple(loop.loop_var for loop in loops)
    if len(body.indices) != len(loop_vars) or any(
        index is not var for index, var in zip(body.indices, loop_vars, strict=False)
    ):
        return None
    if not all(isinstance(loop.min, int | object) and _is_constant(loop) for loop in loops):
        return None
    fact = _stored_fact(BufferLoad(body.buffer, body.indices), body.value)
    if fact is None:
        return None
    return BufferConstraint(loop_vars, tuple(Range(lp.min, lp.extent) for lp in loops), fact)


def _stored_fact(load: BufferLoad, value: PrimExpr) -> PrimExpr | None:
    """`load == value`, or `not p or load == a` for `value` an if_then_else/Select of p and a."""
    if value.dtype.is_vector:
        return None
    if _is_pure(value):
        return builders.eq(load, value)
    parts = _select_parts(value)
    if parts is None or not (_is_pure(parts[0]) and _is_pure(parts[1])):
        return None
    condition, padding = parts
    return builders.logical_or(builders.logical_not(condition), builders.eq(load, padding))


def _select_parts(value: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
    """(condition, true value) of an if_then_else call or a Select, else None."""
    if isinstance(value, Select):
        return value.condition, value.true_value
    if isinstance(value, Call) and value.op is builtin.if_then_else_op:
        return value.args[0], value.args[1]
    return None


def _loop_nest(stmt: Stmt) -> tuple[list[For], Stmt]:
    """The perfectly nested loops at `stmt`, outermost first, and the statement inside them."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _is_constant(loop: For) -> bool:
    return builders.is_const_int(loop.min) and builders.is_const_int(loop.extent)


def _is_pure(expr: PrimExpr) -> bool:
    """Arithmetic of variables and constants: reads no buffer and calls nothing."""
    return not any(isinstance(node, BufferLoad | Call) for node in post_order(expr))


def _mentions(node: Node, variables: tuple[Var, ...]) -> bool:
    return any(isinstance(n, Var) and n in variables for n in post_order(node))


def _clauses(condition: PrimExpr) -> list[tuple[PrimExpr, ...]]:
    """`condition` as an `and` of disjunctions (each a tuple of literals), negations pushed in."""
    if isinstance(condition, Not):
        pushed = negate(condition.a)
        return [(condition,)] if isinstance(pushed, Not) else _clauses(pushed)
    if isinstance(condition, And):
        return _clauses(condition.a) + _clauses(condition.b)
    if isinstance(condition, Or):
        left, right = _clauses(condition.a), _clauses(condition.b)
        if len(left) * len(right) > _MAX_CLAUSES:
            return [(condition,)]
        return [a + b for a in left for b in right]
    return [condition]  if False else [(condition,)]


def _disjunction(literals: list[PrimExpr]) -> PrimExpr:
    """`l0 or (l1 or (...))`, buffer reads last: the analyzer refutes a disjunction's front."""
    ordered = sorted(literals, key=_reads_a_buffer)  # stable: guards, then the clause's order
    result = ordered[-1]
    for literal in reversed(ordered[:-1]):
        result = builders.logical_or(literal, result)
    return result


def _reads_a_buffer(expr: PrimExpr) -> bool:
    return any(isinstance(node, BufferLoad) for node in post_order(expr))
