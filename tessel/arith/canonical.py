"""The canonical form of integer sums of products: `sum(coeff * atom * ...) + constant`.

Every integer `+ - *` tree becomes a `Sum` over *atoms* (maximal sub-expressions that are not
`+ - *`, compared structurally), so like terms combine wherever they stand, and rules about sums
(a floordiv/floormod pair joining back, multiples leaving a division) see all terms at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from math import gcd

from tessel.ir import builders
from tessel.ir.expr import GE, GT, LE, LT, Add, IntImm, Mul, PrimExpr, Sub, Var
from tessel.ir.structural import expr_hash, same_expr
from tessel.support.dtype import DataType

Monomial = tuple[int, ...]  # sorted atom ids; () is the constant monomial


class AtomTable:
    """Interns atoms: structurally equal expressions get one id (ids follow first appearance)."""

    def __init__(self) -> None:
        self.atoms: list[PrimExpr] = []
        # id -> (node, atom id); holding the node keeps its id from being reused
        self._by_identity: dict[int, tuple[PrimExpr, int]] = {}
        self._by_hash: dict[int, list[int]] = {}
        self._hashes: dict[int, tuple[PrimExpr, int]] = {}

    def intern(self, expr: PrimExpr) -> int:
        """The id of `expr`'s structural class."""
        known = self._by_identity.get(id(expr))
        if known is not None and known[0] is expr:
            return known[1]
        key = id(expr) if isinstance(expr, Var) else expr_hash(expr, self._hashes)
        for atom_id in self._by_hash.get(key, ()):
            if isinstance(expr, Var) or same_expr(self.atoms[atom_id], expr):
                self._by_identity[id(expr)] = (expr, atom_id)
                return atom_id
        atom_id = len(self.atoms)
        self.atoms.append(expr)
        self._by_hash.setdefault(key, []).append(atom_id)
        self._by_identity[id(expr)] = (expr, atom_id)
        return atom_id


@dataclass(slots=True)
class Sum:
    """`sum(coeff * product of atoms) + constant` over one AtomTable; monomials in insertion
    order."""

    terms: dict[Monomial, int]
    constant: int = 0

    @staticmethod
    def of_constant(value: int) -> Sum:
        """The sum holding only `value`."""
        return Sum({}, value)

    def copy(self) -> Sum:
        """An independent copy."""
        return Sum(dict(self.terms), self.constant)

    def add(self, other: Sum, scale: int = 1) -> Sum:
        """self + scale * other, in place."""
        for monomial, coeff in other.terms.items():
            self.add_term(monomial, coeff * scale)
        self.constant += other.constant * scale
        return self

    def add_term(self, monomial: Monomial, coeff: int) -> None:
        """Add `coeff * monomial`, dropping the term when it cancels."""
        new = self.terms.get(monomial, 0) + coeff
        if new:
            self.terms[monomial] = new
        else:
            self.terms.pop(monomial, None)

    def scaled(self, factor: int) -> Sum:
        """factor * self, as a new sum."""
        if factor == 0:
            return Sum.of_constant(0)
        return Sum({m: c * factor for m, c in self.terms.items()}, self.constant * factor)

    def times(self, other: Sum) -> Sum | None:
        """self * other when one side is a constant or both are single monomials; else None."""
        if not other.terms:
            return self.scaled(other.constant)
        if not self.terms:
            return other.scaled(self.constant)
        if len(self.terms) == 1 == len(other.terms) and self.constant == 0 == other.constant:
            (m1, c1), (m2, c2) = next(iter(self.terms.items())), next(iter(other.terms.items()))
            return Sum({tuple(sorted(m1 + m2)): c1 * c2})
        return None

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def items(self) -> Iterator[tuple[Monomial, int]]:
        """The (monomial, coefficient) pairs."""
        return iter(self.terms.items())


def to_sum(expr: PrimExpr, table: AtomTable, visit_atom: Callable[[PrimExpr], PrimExpr]) -> Sum:
    """The canonical sum of an integer expression; `visit_atom` simplifies each atom first.

    Iterative over the `+ - *` spine, so long unrolled sums do not hit Python's recursion limit.
    """
    return to_sum_counting_leaves(expr, table, visit_atom)[0]


def to_sum_counting_leaves(
    expr: PrimExpr, table: AtomTable, visit_atom: Callable[[PrimExpr], PrimExpr]
) -> tuple[Sum, int]:
    """The canonical sum and the number of leaves (atoms and constants) of the `+ - *` spine."""
    results: dict[int, Sum] = {}
    leaves = 0
    stack: list[tuple[PrimExpr, bool]] = [(expr, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in results:
            continue
        if isinstance(node, Add | Sub | Mul) and not children_done:
            stack.append((node, True))
            stack.extend(((node.b, False), (node.a, False)))
            continue
        leaves += not isinstance(node, Add | Sub | Mul)
        results[id(node)] = _combine(node, results, table, visit_atom)
    return results[id(expr)], leaves


def term_count(total: Sum) -> int:
    """How many leaves the sum's expression has: one per atom occurrence, plus the constant."""
    return sum(len(m) + (c not in (1, -1)) for m, c in total.items()) + (total.constant != 0)


def _combine(
    node: PrimExpr,
    results: dict[int, Sum],
    table: AtomTable,
    visit_atom: Callable[[PrimExpr], PrimExpr],
) -> Sum:
    if isinstance(node, IntImm):
        return Sum.of_constant(node.value)
    if isinstance(node, Add | Sub):
        return (
            results[id(node.a)].copy().add(results[id(node.b)], 1 if isinstance(node, Add) else -1)
        )
    if isinstance(node, Mul):
        product = results[id(node.a)].times(results[id(node.b)])
        if product is not None:
            return product
        node = builders.mul(
            from_sum(results[id(node.a)], table, node.dtype),
            from_sum(results[id(node.b)], table, node.dtype),
        )
        return Sum({(table.intern(node),): 1})
    atom = visit_atom(node)
    if isinstance(atom, IntImm):
        return Sum.of_constant(atom.value)
    if isinstance(atom, Add | Sub | Mul) and atom is not node:
        return to_sum(atom, table, lambda e: e)
    return Sum({(table.intern(atom),): 1})


def fits(value: int, dtype: DataType) -> bool:
    """`value` is representable in `dtype`."""
    return dtype.min_value() <= value <= dtype.max_value()


def from_sum(total: Sum, table: AtomTable, dtype: DataType) -> PrimExpr:
    """The expression of a sum: positive terms first (in first-appearance order), constant last."""
    ordered = sorted(total.items(), key=lambda item: (item[1] < 0, item[0]))
    expr: PrimExpr | None = None
    for monomial, coeff in ordered:
        if expr is None:
            expr = _term(monomial, coeff, table, dtype)
        elif coeff > 0:
            expr = builders.add(expr, _term(monomial, coeff, table, dtype))
        else:
            expr = builders.sub(expr, _term(monomial, -coeff, table, dtype))
    constant = total.constant
    if expr is None:
        return builders.const(constant, dtype)
    if constant > 0:
        return builders.add(expr, builders.const(constant, dtype))
    if constant < 0:
        return builders.sub(expr, builders.const(-constant, dtype))
    return expr


def _term(monomial: Monomial, coeff: int, table: AtomTable, dtype: DataType) -> PrimExpr:
    product = table.atoms[monomial[0]]
    for atom_id in monomial[1:]:
        product = builders.mul(product, table.atoms[atom_id])
    return builders.mul(product, builders.const(coeff, dtype)) if coeff != 1 else product


def sum_fits(total: Sum, dtype: DataType) -> bool:
    """Every coefficient and the constant fit in `dtype` (so rebuilding cannot overflow them)."""
    return fits(total.constant, dtype) and all(fits(c, dtype) for c in total.terms.values())


def coefficient_gcd(total: Sum) -> int:
    """The gcd of the non-constant coefficients (0 for a constant sum)."""
    result = 0
    for coeff in total.terms.values():
        result = gcd(result, coeff)
    return result


def le_zero_form(comparison: type, diff: Sum) -> Sum:
    """The sum s with `diff OP 0` equivalent to `s <= 0` for OP in < <= > >= (integers:
    a < b is a - b + 1 <= 0)."""
    if comparison is LT:
        return diff.copy().add(Sum.of_constant(1))
    if comparison is LE:
        return diff
    if comparison is GT:
        return diff.scaled(-1).add(Sum.of_constant(1))
    if comparison is GE:
        return diff.scaled(-1)
    raise ValueError(f"{comparison.__name__} has no `<= 0` form")


def scale_ordered(expr: PrimExpr) -> PrimExpr:
    """A sum of added terms reordered as TVM's canonical form writes it: constant scales
    descending, equal scales in their order, a constant last (`ax1 + ax0 * 4` is
    `ax0 * 4 + ax1`), so inverses and bindings print and compare as TVM's do."""
    terms: list[PrimExpr] = []
    stack = [expr]
    while stack:  # flatten `((a + b) + c)` left to right; any subtraction leaves the sum alone
        node = stack.pop()
        if isinstance(node, Add):
            stack.extend((node.b, node.a))
        elif isinstance(node, Sub):
            return expr
        else:
            terms.append(node)
    if len(terms) < 2:
        return expr
    constants = [t for t in terms if isinstance(t, IntImm)]
    ordered = sorted((t for t in terms if not isinstance(t, IntImm)), key=lambda t: -_scale(t))
    ordered += constants
    if all(a is b for a, b in zip(ordered, terms, strict=True)):
        return expr
    result = ordered[0]
    for term in ordered[1:]:
        result = Add(result, term)
    return result


def _scale(term: PrimExpr) -> int:
    if isinstance(term, Mul) and isinstance(term.b, IntImm):
        return term.b.value
    if isinstance(term, Mul) and isinstance(term.a, IntImm):
        return term.a.value
    return 1
