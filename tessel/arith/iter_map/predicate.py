"""Reading a predicate as bounds on iterator expressions: `a < b and c <= d and ...`.

A bound on a single iterator narrows its range; a bound on a sum (`i * 4 + j < 14`) narrows the
iterator that sum fuses into (see iter_map.fuse).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tessel.arith.iter_map.expr import NotIterMapError
from tessel.arith.iter_map.proof import Prover
from tessel.ir import builders
from tessel.ir.expr import GE, GT, LE, LT, Add, And, CmpOp, IntImm, PrimExpr, Range, Sub, Var
from tessel.ir.functor import post_order


@dataclass(frozen=True, slots=True)
class BoundConstraint:
    """`lower <= expr < upper` (either bound may be missing)."""

    expr: PrimExpr
    lower: PrimExpr | None
    upper: PrimExpr | None

    @property
    def size(self) -> int:
        """How many nodes the bounded expression has (inner sums are bounded first)."""
        return sum(1 for _ in post_order(self.expr))


def split_predicate(predicate: PrimExpr, iters: Mapping[Var, Range]) -> list[BoundConstraint]:
    """The bounds a conjunction of comparisons puts on iterator expressions."""
    constraints: list[BoundConstraint] = []
    pending = [predicate]
    while pending:
        term = pending.pop()
        if isinstance(term, And):
            pending.extend((term.b, term.a))
        elif isinstance(term, IntImm) and term.value:
            continue
        elif isinstance(term, LT | LE | GT | GE) and term.a.dtype.is_integer:
            constraint = _bound(term, iters)
            if constraint is not None:
                constraints.append(constraint)
        else:
            raise NotIterMapError(
                f"the predicate term `{term}` is not a bound (<, <=, >, >=) on the iterators"
            )
    return constraints


def _bound(term: CmpOp, iters: Mapping[Var, Range]) -> BoundConstraint | None:
    a_uses, b_uses = _uses(term.a, iters), _uses(term.b, iters)
    if not a_uses and not b_uses:
        return None  # a fact about other variables; it does not shape the map
    if a_uses and b_uses:
        expr, bound = _separate(term.a, term.b, iters)
        return _as_constraint(type(term), expr, bound, iterators_left=True)
    if a_uses:
        return _as_constraint(type(term), term.a, term.b, iterators_left=True)
    return _as_constraint(type(term), term.b, term.a, iterators_left=False)


def _as_constraint(
    kind: type, expr: PrimExpr, bound: PrimExpr, *, iterators_left: bool
) -> BoundConstraint:
    """Turn `expr OP bound` (or `bound OP expr`) into [lower, upper)."""
    below = kind in (LT, LE) if iterators_left else kind in (GT, GE)  # expr is below the bound
    inclusive = kind in (LE, GE)
    if below:
        return BoundConstraint(expr, None, builders.add(bound, 1) if inclusive else bound)
    return BoundConstraint(expr, bound if inclusive else builders.add(bound, 1), None)


def _separate(a: PrimExpr, b: PrimExpr, iters: Mapping[Var, Range]) -> tuple[PrimExpr, PrimExpr]:
    """`a - b` as `expr - bound`, `expr` holding the terms that use iterators."""
    expr: PrimExpr = builders.const(0, a.dtype)
    bound: PrimExpr = builders.const(0, a.dtype)
    pending = [(a, 1), (b, -1)]
    while pending:
        term, sign = pending.pop()
        if isinstance(term, Add | Sub):
            pending.extend([(term.a, sign), (term.b, sign if isinstance(term, Add) else -sign)])
        elif _uses(term, iters):
            expr = builders.add(expr, term) if sign > 0 else builders.sub(expr, term)
        else:
            bound = builders.sub(bound, term) if sign > 0 else builders.add(bound, term)
    return expr, bound


def _uses(expr: PrimExpr, iters: Mapping[Var, Range]) -> bool:
    return any(isinstance(node, Var) and node in iters for node in post_order(expr))


def narrow_ranges(
    iters: Mapping[Var, Range], constraints: list[BoundConstraint], prover: Prover
) -> tuple[dict[Var, Range], list[BoundConstraint]]:
    """Apply the bounds on single iterators to their ranges; return the other bounds."""
    ranges = dict(iters)
    rest = []
    for constraint in constraints:
        var = constraint.expr
        if not (isinstance(var, Var) and var in ranges):
            rest.append(constraint)
            continue
        dom = ranges[var]
        low, high = dom.min, builders.add(dom.min, dom.extent)
        if constraint.lower is not None:
            low = prover.simplify(builders.max_value(low, constraint.lower))
        if constraint.upper is not None:
            high = prover.simplify(builders.min_value(high, constraint.upper))
        extent = prover.simplify(builders.sub(high, low))
        if isinstance(extent, IntImm) and extent.value <= 0:
            raise NotIterMapError(f"the predicate leaves no value of `{var.name}`")
        ranges[var] = Range(low, extent)
    return ranges, rest
