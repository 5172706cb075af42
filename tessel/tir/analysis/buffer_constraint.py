"""Buffer constraints as facts: `T.assume` over a nest of points, instantiated at each load.

A buffer constraint (DESIGN.md §5) states a condition at every point of a box, e.g. the
`<buffer>_assumption` block transform_layout writes for a padded input:
`T.assume(not padding(i, k) or A[i, k] == 0)` for all (i, k) in the new shape. An analysis uses
it where the buffer is read: at a load `A[x, y]` the condition with (i, k) := (x, y) holds, if
(x, y) lies in the box. Known buffer contents (a nest that stores a pure value into every point)
are the same kind of fact.
"""

from __future__ import annotations

from dataclasses import dataclass

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import Call, PrimExpr, Range, Select, Var
from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.tir import builtin
from tessel.tir.block import BlockRealize
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore, Evaluate, For, Stmt


@dataclass(frozen=True)
class BufferConstraint:
    """`condition` holds at every point of `vars` within `ranges` (a buffer constraint, or known
    buffer contents)."""

    vars: tuple[Var, ...]
    ranges: tuple[Range, ...]
    condition: PrimExpr

    def instances_for(self, expr: Node, analyzer: Analyzer) -> list[PrimExpr]:
        """The condition instantiated at every load in `expr` that it can speak about."""
        found: list[PrimExpr] = []
        for load in self._pattern_loads():
            for node in post_order(expr):
                if isinstance(node, BufferLoad) and node.buffer is load.buffer:
                    instance = self._instance(load, node, analyzer)
                    if instance is not None and not any(same_expr(instance, f) for f in found):
                        found.append(instance)
        return found

    def _pattern_loads(self) -> list[BufferLoad]:
        """The loads of the condition indexed exactly by the constraint's variables."""
        own = set(self.vars)
        return [n for n in post_order(self.condition) if isinstance(n, BufferLoad)
                and len(n.indices) == len(self.vars) and set(n.indices) == own]  # fmt: skip

    def _instance(self, pattern: BufferLoad, load: BufferLoad, analyzer: Analyzer) -> PrimExpr | None:
        if load.predicate is not None or any(i.dtype.lanes != 1 for i in load.indices):
            return None
        values = dict(zip(pattern.indices, load.indices, strict=True))
        condition = substitute(self.condition, values)  # type: ignore[arg-type]
        inside = _in_ranges([values[v] for v in self.vars], self.ranges)  # type: ignore[index]
        if analyzer.can_prove(inside, exact=False):
            return condition
        return builders.logical_or(builders.logical_not(inside), condition)


def _in_ranges(values: list[PrimExpr], ranges: tuple[Range, ...]) -> PrimExpr:
    inside: PrimExpr = builders.const(True, "bool")
    for value, rng in zip(values, ranges, strict=True):
        inside = builders.logical_and(inside, builders.logical_and(
            builders.ge(value, rng.min), builders.lt(value, builders.add(rng.min, rng.extent))))  # fmt: skip
    return inside


def _nest(stmt: Stmt) -> tuple[list[For], Stmt]:
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def assumed_condition(stmt: Stmt) -> PrimExpr | None:
    """The condition of a `T.evaluate(T.assume(cond))` statement, else None."""
    if isinstance(stmt, Evaluate) and isinstance(stmt.value, Call) and stmt.value.op is builtin.assume_op:
        return stmt.value.args[0]
    return None


def constraint_of(stmt: Stmt) -> BufferConstraint | None:
    """The constraint a nest of loops around one `T.assume` states (lowered, or around a block
    whose body is the assume), else None."""
    loops, inner = _nest(stmt)
    if not loops:
        return None
    if isinstance(inner, BlockRealize):
        if not builders.is_const_int(inner.predicate, 1) or inner.block.init is not None:
            return None
        condition = assumed_condition(inner.block.body)
        if condition is None:
            return None
        iters = inner.block.iter_vars
        return BufferConstraint(tuple(iv.var for iv in iters), tuple(iv.dom for iv in iters), condition)
    condition = assumed_condition(inner)
    if condition is None:
        return None
    return BufferConstraint(tuple(lp.loop_var for lp in loops),
                            tuple(Range(lp.min, lp.extent) for lp in loops), condition)  # fmt: skip


def known_contents_of(stmt: Stmt) -> BufferConstraint | None:
    """What a loop nest storing a load-free value into every point of a buffer leaves there:
    `X[v] == value`, or `not p or X[v] == a` for a stored `T.if_then_else(p, a, b)`."""
    loops, inner = _nest(stmt)
    if not loops or not isinstance(inner, BufferStore):
        return None
    loop_vars = [lp.loop_var for lp in loops]
    if len(inner.indices) != len(loops) or any(i is not v for i, v in zip(inner.indices, loop_vars, strict=True)):
        return None
    here = BufferLoad(inner.buffer, inner.indices)
    value, guard = inner.value, None
    if _is_branch(value):
        guard, value = value.args[0] if isinstance(value, Call) else value.condition, _then_value(value)  # type: ignore[union-attr]
    if any(isinstance(n, BufferLoad) for n in post_order(value)):
        return None
    condition = builders.eq(here, value)
    if guard is not None:
        condition = builders.logical_or(builders.logical_not(guard), condition)
    return BufferConstraint(tuple(loop_vars), tuple(Range(lp.min, lp.extent) for lp in loops), condition)


def _is_branch(value: PrimExpr) -> bool:
    return isinstance(value, Select) or (isinstance(value, Call) and value.op is builtin.if_then_else_op)


def _then_value(value: PrimExpr) -> PrimExpr:
    return value.true_value if isinstance(value, Select) else value.args[1]  # type: ignore[attr-defined]
