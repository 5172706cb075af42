"""What a set of boolean facts says, in forms the simplifier can use.

Facts are any boolean expressions (`i < n`, `not (i >= 14) or A[i] == 0`). They are split into
conjuncts; comparisons become linear facts `s <= 0` over the analyzer's atoms; `x or y` yields `y`
once `x` is refuted by the others (how a buffer constraint's padding clause comes into force);
`atom == value` becomes a known value that the simplifier substitutes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tessel.arith.canonical import AtomTable, Sum, le_zero_form, to_sum
from tessel.ir import builders
from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    CmpOp,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Var,
)

_NEGATED: dict[type, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    LT: builders.ge, LE: builders.gt, GT: builders.le, GE: builders.lt,
    EQ: builders.ne, NE: builders.eq,
}  # fmt: skip


@dataclass
class DerivedFacts:
    """Linear facts (each `s <= 0`) and known values of atoms, derived from the facts in scope."""

    linear: list[Sum] = field(default_factory=list)
    values: dict[int, PrimExpr] = field(default_factory=dict)  # atom id -> value


def negate(cond: PrimExpr) -> PrimExpr:
    """`not cond`, pushed through comparisons and De Morgan so facts stay in linear form."""
    if isinstance(cond, Not):
        return cond.a
    if isinstance(cond, CmpOp) and type(cond) in _NEGATED:
        return _NEGATED[type(cond)](cond.a, cond.b)
    if isinstance(cond, And):
        return builders.logical_or(negate(cond.a), negate(cond.b))
    if isinstance(cond, Or):
        return builders.logical_and(negate(cond.a), negate(cond.b))
    return builders.logical_not(cond)


def as_le_zero(cond: CmpOp, table: AtomTable) -> list[Sum]:
    """The linear facts `s <= 0` equivalent to an integer comparison (two for `==`, none for
    `!=`)."""
    diff = to_sum(cond.a, table, _same).add(to_sum(cond.b, table, _same), -1)
    if isinstance(cond, EQ):
        return [diff.copy(), diff.scaled(-1)]
    if isinstance(cond, NE):
        return []
    return [le_zero_form(type(cond), diff)]


def _same(expr: PrimExpr) -> PrimExpr:
    return expr


def derive(
    facts: Iterable[PrimExpr], table: AtomTable, refutes: Callable[[DerivedFacts, PrimExpr], bool]
) -> DerivedFacts:
    """Split, linearise and chain the facts; `refutes(derived, x)` says the facts exclude x."""
    derived = DerivedFacts()
    pending_or: list[Or] = []
    queue = list(facts)
    while queue:
        while queue:
            _absorb(queue.pop(), derived, table, queue, pending_or)
        still_pending = []
        for fact in pending_or:
            if refutes(derived, fact.a):
                queue.append(fact.b)
            elif refutes(derived, fact.b):
                queue.append(fact.a)
            else:
                still_pending.append(fact)
        pending_or = still_pending
    return derived


def _absorb(
    fact: PrimExpr,
    derived: DerivedFacts,
    table: AtomTable,
    queue: list[PrimExpr],
    pending_or: list[Or],
) -> None:
    if isinstance(fact, IntImm):
        return
    if isinstance(fact, And):
        queue.extend((fact.a, fact.b))
    elif isinstance(fact, Or):
        pending_or.append(fact)
    elif isinstance(fact, Not):
        negated = negate(fact.a)
        if not isinstance(negated, Not):
            queue.append(negated)
    elif isinstance(fact, CmpOp) and not fact.a.dtype.is_vector:
        if isinstance(fact, EQ):
            _record_value(fact, derived, table)
        if fact.a.dtype.is_int and fact.a.dtype.bits >= 32:  # types that obey the laws
            derived.linear.extend(as_le_zero(fact, table))


def _record_value(fact: EQ, derived: DerivedFacts, table: AtomTable) -> None:
    """`atom == value` with the atom not a plain variable: remember the value to substitute."""
    for atom, value in ((fact.a, fact.b), (fact.b, fact.a)):
        if not isinstance(atom, Var | IntImm | FloatImm) and isinstance(
            value, IntImm | FloatImm | Var
        ):
            derived.values[table.intern(atom)] = value
            return
