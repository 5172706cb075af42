"""The Analyzer: the one arithmetic service every schedule primitive and pass asks.

It holds what is known — variable ranges (`bind`), values, and scoped facts (`constraint_scope`),
including facts over buffer loads (buffer constraints, TVM's RFC 77) — and answers with the
simplifier, bounds, modular sets, integer sets and proofs. Facts are on by default: every answer
uses them (the RFC's point: primitives benefit from constraints without knowing about them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tessel.arith import presburger
from tessel.arith.canonical import AtomTable, Sum, coefficient_gcd, le_zero_form, to_sum
from tessel.arith.const_int_bound import ConstIntBound, const_int_bound
from tessel.arith.facts import DerivedFacts, as_le_zero, derive, negate
from tessel.arith.int_set import IntSet, int_set
from tessel.arith.modular_set import ModularSet, modular_set
from tessel.arith.rewrite import Rewriter
from tessel.arith.rule import RuleSet, index_by_root_type
from tessel.arith.rules import DEFAULT_RULE_SETS
from tessel.ir import builders
from tessel.ir.expr import EQ, NE, And, CmpOp, FloatImm, IntImm, Not, Or, PrimExpr, Range, Var
from tessel.ir.substitute import substitute


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One rewrite: the rule's name and the expression before and after it."""

    rule: str
    before: PrimExpr
    after: PrimExpr

    def __str__(self) -> str:
        return f"{self.rule}: {self.before}  ->  {self.after}"


# Simplified expressions an Analyzer keeps before it starts afresh (a bound on its memory).
_SIMPLIFIED_LIMIT = 200_000


class Analyzer:
    """Arithmetic facts and questions over scalar expressions (TVM's arith::Analyzer)."""

    def __init__(self, rule_sets: Sequence[RuleSet] = DEFAULT_RULE_SETS, step_limit: int = 100_000):
        self.table = AtomTable()
        self._rules = index_by_root_type(tuple(rule_sets))
        self._step_limit = step_limit
        self._ranges: dict[Var, Range] = {}
        self._values: dict[Var, PrimExpr] = {}
        self._facts: list[PrimExpr] = []
        self._traces: list[list[TraceStep]] = []
        self._learned = 0  # counts bind and assume calls (they outlive a constraint_scope)
        self._invalidate()

    def _invalidate(self) -> None:
        """Forget what was derived from the facts and bindings (they changed)."""
        self._derived: DerivedFacts | None = None
        self._deriving = False
        self._var_bounds_cache: dict[Var, ConstIntBound] | None = None
        self._atom_bounds: dict[int, ConstIntBound] = {}
        self._expr_bounds: dict[int, tuple[PrimExpr, ConstIntBound]] = {}  # by node identity
        self._simplified: dict[int, tuple[PrimExpr, PrimExpr]] = {}  # simplify's, by identity

    # ------------------------------------------------------------------ what is known
    def bind(self, var: Var, value: Range | PrimExpr | int, allow_override: bool = False) -> None:
        """Let `var` range over a Range, or stand for a value, from now on."""
        if not allow_override and (var in self._ranges or var in self._values):
            raise ValueError(f"variable `{var.name}` is already bound; pass allow_override=True")
        if isinstance(value, Range):
            self._ranges[var] = value
            self._values.pop(var, None)
        else:
            self._values[var] = builders.convert(value)
            self._ranges.pop(var, None)
        self._learned += 1
        self._invalidate()

    def bound_range(self, var: Var) -> Range | None:
        """The Range `var` was bound to, or None."""
        return self._ranges.get(var)

    def assume(self, condition: PrimExpr) -> None:
        """From now on, `condition` is a known fact (what a function states about its variables,
        such as `T.assume(n > 0)`, holds for the analyzer's whole use)."""
        self._facts.append(builders.convert(condition))
        self._learned += 1
        self._invalidate()

    @contextmanager
    def constraint_scope(self, condition: PrimExpr) -> Iterator[None]:
        """Within the block, `condition` is a known fact (any boolean expression)."""
        outer, learned = self._simplified, self._learned
        self._facts.append(builders.convert(condition))
        self._invalidate()
        try:
            yield
        finally:
            self._facts.pop()
            self._invalidate()
            if self._learned == learned:  # nothing bound or assumed inside: as it was outside
                self._simplified = outer

    @contextmanager
    def trace(self) -> Iterator[list[TraceStep]]:
        """Record every rule that fires inside the block, in order."""
        steps: list[TraceStep] = []
        self._traces.append(steps)
        try:
            yield steps
        finally:
            self._traces.remove(steps)

    def record(self, rule: str, before: PrimExpr, after: PrimExpr) -> None:
        """Called by the simplifier when a rule fires."""
        for steps in self._traces:
            steps.append(TraceStep(rule, before, after))

    # ------------------------------------------------------------------ questions
    def simplify(self, expr: PrimExpr | int) -> PrimExpr:
        """An equal, simpler expression under what is known (rules to a fixpoint)."""
        # One pass: every rule's result is simplified again on the spot, so the pass ends at a
        # fixpoint (the idempotence property test checks it).
        # Results are kept across calls until what is known changes: the schedule primitives
        # and passes ask again and again about the same index expressions. Not while tracing
        # (a trace lists the rules that fire) or deriving facts (the facts are not all in).
        if len(self._simplified) > _SIMPLIFIED_LIMIT:
            self._simplified = {}
        keep = not self._traces and not self._deriving
        memo = self._simplified if keep else {}
        return Rewriter(self, self._rules, self._step_limit, memo).visit(builders.convert(expr))

    def const_int_bound(self, expr: PrimExpr | int) -> ConstIntBound:
        """Inclusive constant bounds of an integer expression under what is known."""
        expr = builders.convert(expr)
        cached = self._expr_bounds.get(id(expr))
        if cached is not None and cached[0] is expr:
            return cached[1]
        bound = const_int_bound(expr, self._var_bounds(), self._atom_bound)
        if not self._deriving:
            self._expr_bounds[id(expr)] = (expr, bound)
        return bound

    def modular_set(self, expr: PrimExpr | int) -> ModularSet:
        """The residue class `coeff * k + base` the expression's values lie in."""
        return modular_set(builders.convert(expr))

    def int_set(
        self, expr: PrimExpr, dom_map: Mapping[Var, Range | IntSet] | None = None
    ) -> IntSet:
        """The symbolic interval of values `expr` takes as the vars of `dom_map` range."""
        return int_set(expr, dom_map or {}, self.simplify, self.const_int_bound)

    def can_prove(self, condition: PrimExpr | bool, *, exact: bool = True) -> bool:
        """`condition` holds for every value allowed by what is known (False: not proven).

        Rules and bounds first; with `exact`, an affine question falls back to islpy. Without
        it (rule guards, which run on every match) a comparison is only checked linearly, so a
        guard costs time proportional to its operands, not a whole simplification.
        """
        condition = builders.convert(condition)
        if not exact and isinstance(condition, CmpOp) and _is_scalar_int(condition.a):
            a, b = (
                to_sum(side, self.table, self._known_or_same) for side in (condition.a, condition.b)
            )
            return self.decide_comparison(type(condition), a.add(b, -1)) is True
        if not exact and isinstance(condition, EQ):  # floats: equal once known values are in
            a, b = (self._known_or_same(side) for side in (condition.a, condition.b))
            return a is b or (
                isinstance(a, FloatImm) and isinstance(b, FloatImm) and a.value == b.value
            )
        simplified = self.simplify(condition)
        if isinstance(simplified, IntImm):
            return bool(simplified.value)
        if isinstance(simplified, And):
            return self.can_prove(simplified.a, exact=exact) and self.can_prove(
                simplified.b, exact=exact
            )
        if isinstance(simplified, Or) and (
            self.can_prove(simplified.a, exact=False) or self.can_prove(simplified.b, exact=False)
        ):
            return True
        return exact and self._prove_exactly(simplified)

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int, *, exact: bool = True) -> bool:
        """`a == b` for every value allowed by what is known."""
        a, b = builders.match_types(a, b)
        return self.can_prove(builders.eq(a, b), exact=exact)

    # ------------------------------------------------------------------ for the simplifier
    def known_value(self, expr: PrimExpr) -> PrimExpr | None:
        """The value a bound variable or a fact-fixed atom (`A[i] == 0`) stands for, else None."""
        if isinstance(expr, Var):
            return self._values.get(expr)
        derived = self.derived()
        if not derived.values:
            return None
        atom_id = self.table.intern(expr)
        return derived.values.get(atom_id)

    def _known_or_same(self, expr: PrimExpr) -> PrimExpr:
        known = self.known_value(expr)
        return expr if known is None else known

    def sum_bound(self, total: Sum) -> ConstIntBound:
        """Constant bounds of a canonical sum over this analyzer's atoms (term by term)."""
        result = ConstIntBound.point(total.constant)
        for monomial, coeff in total.items():
            term = ConstIntBound.point(coeff)
            for atom_id in monomial:
                term = term.times(self._atom_id_bound(atom_id))
            result = result.plus(term)
        return result

    def decide_comparison(self, comparison: type, diff: Sum) -> bool | None:
        """Whether `diff OP 0` holds (True), fails (False) or is unknown (None) for OP one of
        the comparison node types, by bounds and the linear facts in scope."""
        if comparison is EQ or comparison is NE:
            if not diff.terms:
                return (diff.constant == 0) == (comparison is EQ)
            excluded = diff.constant % coefficient_gcd(diff) != 0 or not self.sum_bound(
                diff
            ).contains(0)
            if excluded:
                return comparison is NE
            if self.prove_le_zero(diff) and self.prove_le_zero(diff.scaled(-1)):
                return comparison is EQ
            return None
        le_zero = le_zero_form(comparison, diff)  # the comparison is `le_zero <= 0`
        if self.prove_le_zero(le_zero):
            return True
        if self.prove_le_zero(le_zero.scaled(-1).add(Sum.of_constant(1))):
            return False
        return None

    def prove_le_zero(self, total: Sum) -> bool:
        """`total <= 0` follows from bounds, or from one linear fact `f <= 0` with total <= f."""
        if self.sum_bound(total).max_value <= 0:
            return True
        return any(
            self.sum_bound(total.copy().add(fact, -1)).max_value <= 0
            for fact in self.derived().linear
        )

    def derived(self) -> DerivedFacts:
        """The facts in scope, linearised (recomputed when facts or bindings change)."""
        if self._derived is None:
            self._derived = DerivedFacts()  # what the facts' own derivation may use so far
            self._deriving = True
            try:
                self._derived = derive(self._facts, self.table, self._refutes)
            finally:
                self._deriving = False
        return self._derived

    # ------------------------------------------------------------------ internals
    def _refutes(self, derived: DerivedFacts, cond: PrimExpr) -> bool:
        """The linear facts derived so far exclude `cond` (a comparison, or an and/or/not of
        them: a buffer constraint's guard is its padding predicate, often a disjunction)."""
        return self._implied(derived, negate(cond))

    def _implied(self, derived: DerivedFacts, cond: PrimExpr) -> bool:
        """The linear facts derived so far imply `cond`."""
        if isinstance(cond, And):
            return self._implied(derived, cond.a) and self._implied(derived, cond.b)
        if isinstance(cond, Or):
            return self._implied(derived, cond.a) or self._implied(derived, cond.b)
        if not (isinstance(cond, CmpOp) and cond.a.dtype.is_integer):
            return False
        sums = as_le_zero(cond, self.table)
        if not sums:  # `x != y` has no linear form: nothing to check it against
            return False
        saved, self._derived = self._derived, derived
        try:
            return all(self.prove_le_zero(s) for s in sums)
        finally:
            self._derived = saved

    def _atom_id_bound(self, atom_id: int) -> ConstIntBound:
        cached = self._atom_bounds.get(atom_id)
        if cached is None:
            cached = self.const_int_bound(self.table.atoms[atom_id])
            if not self._deriving:
                self._atom_bounds[atom_id] = cached
        return cached

    def _var_bounds(self) -> dict[Var, ConstIntBound]:
        if self._var_bounds_cache is not None:
            return self._var_bounds_cache
        bounds = self._compute_var_bounds()
        if not self._deriving:
            self._var_bounds_cache = bounds
        return bounds

    def _compute_var_bounds(self) -> dict[Var, ConstIntBound]:
        bounds: dict[Var, ConstIntBound] = {}
        for var, rng in self._ranges.items():
            lo = const_int_bound(rng.min, {}, None)
            hi = const_int_bound(builders.add(rng.min, rng.extent), {}, None)
            bounds[var] = ConstIntBound(lo.min_value, hi.max_value - 1)
        for var, value in self._values.items():
            bounds[var] = const_int_bound(value, bounds, None)
        for total in self.derived().linear:
            _tighten_from_fact(total, self.table, bounds)
        return bounds

    def _atom_bound(self, expr: PrimExpr) -> ConstIntBound | None:
        cached = self._expr_bounds.get(id(expr))
        if cached is not None and cached[0] is expr:
            return cached[1]  # bounded before, as a sub-expression simplified earlier
        if isinstance(expr, Var):
            return None
        value = self.known_value(expr) if self._derived is not None else None
        return ConstIntBound.point(value.value) if isinstance(value, IntImm) else None

    def _prove_exactly(self, condition: PrimExpr) -> bool:
        """islpy's answer for an affine condition under the affine facts; False if not affine."""
        assumptions = [f for f in self._facts if _is_affine_candidate(f)]
        condition = substitute(condition, self._values) if self._values else condition
        try:
            return presburger.can_prove(condition, dict(self._ranges), assumptions)
        except presburger.NotPresburger:
            return False


def _same(expr: PrimExpr) -> PrimExpr:
    return expr


def _is_scalar_int(expr: PrimExpr) -> bool:
    """A scalar of a type whose arithmetic obeys the integer laws (int32/int64: no overflow)."""
    dtype = expr.dtype
    return dtype.is_int and dtype.bits >= 32 and not dtype.is_vector


def _is_affine_candidate(fact: PrimExpr) -> bool:
    return isinstance(fact, CmpOp | And | Or | Not)


def _tighten_from_fact(total: Sum, table: AtomTable, bounds: dict[Var, ConstIntBound]) -> None:
    """`coeff * v + k <= 0` bounds a single variable v."""
    if len(total.terms) != 1:
        return
    ((monomial, coeff),) = total.terms.items()
    if len(monomial) != 1 or not isinstance(table.atoms[monomial[0]], Var):
        return
    var = table.atoms[monomial[0]]
    current = bounds.get(var, ConstIntBound.of_dtype(var.dtype))
    k = total.constant
    if coeff > 0:  # v <= floor(-k / coeff)
        bounds[var] = current.intersect(ConstIntBound(-float("inf"), (-k) // coeff))
    else:  # v >= ceil(k / -coeff)
        bounds[var] = current.intersect(ConstIntBound(-((-k) // (-coeff)), float("inf")))
