"""Buffer constraints and known buffer contents, instantiated where the buffer is read.

A buffer constraint (docs/architecture.md §5) states a condition at every point of a box, e.g. the
`<buffer>_assumption` block transform_layout writes for a padded input:
`T.assume(not padding(i, k) or A[i, k] == 0)` for all (i, k) in the new shape. An analysis uses
it where the buffer is read: at a load `A[x, y]` the condition with (i, k) := (x, y) holds if
(x, y) lies in the box, so the instance is guarded by the bounds the analyzer cannot prove. Known
buffer contents (a nest that stores a pure value, or a padding `if_then_else` with a pure padding
value, into every point of a box) are the same kind of fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import Call, PrimExpr, Range, Select, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node
from tessel.ir.structural import expr_hash, same_expr
from tessel.ir.substitute import substitute
from tessel.tir import builtin
from tessel.tir.block import BlockRealize
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.stmt import BufferStore, Evaluate, For, Stmt


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
        buckets: dict[int, list[PrimExpr]] = {}  # by expr_hash, for deduplication
        memo: dict[int, tuple[object, int]] = {}
        loads = [
            n for n in post_order(expr) if isinstance(n, BufferLoad) and n.buffer in self._patterns
        ]
        for load in loads:
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

    def kept_after(self, load: BufferLoad, store: BufferStore, analyzer: Analyzer) -> bool:
        """The condition reads the store's buffer only at `load`, indexed by the constraint's
        variables: the store can change only the instance at the element it writes, which must
        still hold with the stored value (or say nothing about that element)."""
        if load not in self._patterns.get(load.buffer, ()):
            return False
        mapping: dict[Var, PrimExpr] = {}
        for wanted, index in zip(load.indices, store.indices, strict=True):
            if wanted in self.vars and wanted.dtype == index.dtype:
                mapping[wanted] = index  # type: ignore[index]  # a constraint variable
            elif wanted in self.vars:
                return False
            elif not same_expr(wanted, index):
                # another row than the one the condition speaks about, or unknown
                return analyzer.can_prove(builders.ne(wanted, index), exact=False)
        written = BufferLoad(store.buffer, store.indices)
        after = _replace_load(self._instance(mapping, analyzer), written, store.value)
        return analyzer.can_prove(after, exact=False)

    @cached_property
    def _patterns(self) -> dict[Buffer, list[BufferLoad]]:
        """The condition's loads indexed by every constraint variable once, by buffer; other
        indices may be expressions free of the constraint variables (`A[o, i]` over `i`)."""
        patterns: dict[Buffer, list[BufferLoad]] = {}
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
            if wanted in self.vars and wanted.dtype == index.dtype:
                mapping[wanted] = index  # type: ignore[index]  # a constraint variable
            elif wanted in self.vars or not same_expr(wanted, index):
                return None
        return mapping

    def _instance(self, mapping: dict[Var, PrimExpr], analyzer: Analyzer) -> PrimExpr:
        """The condition at `mapping`, guarded by the range bounds the analyzer cannot prove."""
        condition = substitute(self.condition, mapping)
        inside: PrimExpr = builders.const(True)
        for var, rng in zip(self.vars, self.ranges, strict=True):
            lo, extent = substitute(rng.min, mapping), substitute(rng.extent, mapping)
            index = mapping[var]
            for bound in (builders.le(lo, index), builders.lt(index, builders.add(lo, extent))):
                if not analyzer.can_prove(bound, exact=False):
                    inside = builders.logical_and(inside, bound)
        return builders.logical_or(builders.logical_not(inside), condition)


def assumed_condition(stmt: Stmt) -> PrimExpr | None:
    """The condition of a `T.evaluate(T.assume(cond))` statement, else None."""
    if isinstance(stmt, Evaluate):
        value = stmt.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            return value.args[0]
    return None


def constraint_of(stmt: Stmt) -> BufferConstraint | None:
    """The constraint a nest of loops around one `T.assume` states (lowered, or around a block
    whose body is the assume), else None."""
    loops, body = _loop_nest(stmt)
    if not loops:
        return None
    if isinstance(body, BlockRealize):
        return _block_constraint(body, loops)
    condition = assumed_condition(body)
    if condition is None:
        return None
    ranges = tuple(Range(loop.min, loop.extent) for loop in loops)
    return BufferConstraint(tuple(loop.loop_var for loop in loops), ranges, condition)


def _block_constraint(realize: BlockRealize, loops: list[For]) -> BufferConstraint | None:
    """The block's assumption over its iterators' domains; a `T.where` predicate becomes a guard
    when the loop variables it reads are each bound to an iterator, else None."""
    block = realize.block
    condition = assumed_condition(block.body)
    if condition is None or block.init is not None or not block.iter_vars:
        return None
    if not builders.is_const_int(realize.predicate, 1):
        iterators = {
            value: iv.var
            for value, iv in zip(realize.iter_values, block.iter_vars, strict=True)
            if isinstance(value, Var)
        }
        predicate = substitute(realize.predicate, iterators)
        if _mentions(predicate, tuple(loop.loop_var for loop in loops)):
            return None  # the predicate reads a loop variable no iterator stands for
        condition = builders.logical_or(builders.logical_not(predicate), condition)
    iter_vars = tuple(iv.var for iv in block.iter_vars)
    return BufferConstraint(iter_vars, tuple(iv.dom for iv in block.iter_vars), condition)


def known_contents_of(stmt: Stmt) -> BufferConstraint | None:
    """What a nest of constant loops storing a pure value into every point of a box leaves there:
    `X[v] == value`, or `not p or X[v] == a` for a stored `T.if_then_else(p, a, b)`, else None."""
    loops, store = _loop_nest(stmt)
    if not loops or not isinstance(store, BufferStore) or store.predicate is not None:
        return None
    loop_vars = tuple(loop.loop_var for loop in loops)
    if len(store.indices) != len(loop_vars) or not all(_is_constant(loop) for loop in loops):
        return None
    if any(index is not var for index, var in zip(store.indices, loop_vars, strict=True)):
        return None
    fact = _stored_fact(BufferLoad(store.buffer, store.indices), store.value)
    if fact is None:
        return None
    return BufferConstraint(loop_vars, tuple(Range(lp.min, lp.extent) for lp in loops), fact)


def _stored_fact(load: BufferLoad, value: PrimExpr) -> PrimExpr | None:
    """`load == value` for a pure value; `not p or load == a` for a branch with p and a pure
    (p must not read the buffer either: it would be read after the store changed it)."""
    if value.dtype.is_vector:
        return None
    if _is_pure(value):
        return builders.eq(load, value)
    parts = _branch_parts(value)
    if parts is None or not all(_is_pure(part) for part in parts):
        return None
    condition, padding = parts
    return builders.logical_or(builders.logical_not(condition), builders.eq(load, padding))


def _branch_parts(value: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
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
    """Arithmetic of variables and constants: reads no buffer and calls nothing (no undef)."""
    return not any(isinstance(node, BufferLoad | Call) for node in post_order(expr))


def _mentions(node: Node, variables: tuple[Var, ...]) -> bool:
    return any(isinstance(n, Var) and n in variables for n in post_order(node))


def store_keeps(
    fact: PrimExpr, constraint: BufferConstraint | None, store: BufferStore, analyzer: Analyzer
) -> bool:
    """True if `store` cannot make `fact` false: the element it writes is one the fact says
    nothing about, or the stored value satisfies the fact too. `fact` is a scalar assumption, or
    the condition of `constraint`, which holds at every point of its box; `analyzer` knows the
    store's context. False whenever that cannot be proven."""
    loads = [n for n in post_order(fact) if isinstance(n, BufferLoad) and n.buffer is store.buffer]
    if not loads:
        return not any(
            isinstance(n, BufferLoad) and n.buffer.data is store.buffer.data
            for n in post_order(fact)
        )  # another view of the same memory: no element-wise reasoning
    if store.predicate is not None or store.value.dtype.is_vector:
        return False
    if any(not same_expr(load, loads[0]) or load.predicate is not None for load in loads):
        return False  # the fact reads several elements of the buffer: keep it simple
    if constraint is None:
        return _scalar_fact_kept(fact, loads[0], store, analyzer)
    return constraint.kept_after(loads[0], store, analyzer)


def _scalar_fact_kept(
    fact: PrimExpr, load: BufferLoad, store: BufferStore, analyzer: Analyzer
) -> bool:
    """`fact` reads the buffer only at `load`: kept if the store writes elsewhere, or writes a
    value for which the fact still holds."""
    elsewhere: PrimExpr = builders.const(False)
    for index, written in zip(load.indices, store.indices, strict=True):
        elsewhere = builders.logical_or(elsewhere, builders.ne(index, written))
    after = _replace_load(fact, load, store.value)
    return analyzer.can_prove(builders.logical_or(elsewhere, after), exact=False)


def _replace_load(expr: PrimExpr, load: BufferLoad, value: PrimExpr) -> PrimExpr:
    """`expr` with every load of `load`'s element replaced by `value`."""
    result = _LoadReplacer(load, value).visit(expr)
    assert isinstance(result, PrimExpr)
    return result


class _LoadReplacer(Mutator):
    """Replaces the loads of one element by a value."""

    def __init__(self, load: BufferLoad, value: PrimExpr) -> None:
        super().__init__()
        self.load, self.value = load, value

    def visit_BufferLoad(self, node: BufferLoad) -> Node:
        if node.buffer is self.load.buffer and same_expr(node, self.load):
            return self.value
        return self.generic_visit(node)
