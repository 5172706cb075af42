"""Padded splits by a symbolic divisor (`lambda i: [i // n, i % n]` on an extent `n` may not
divide): the layout's shape, inverse and padding predicate, computed from the split itself.

isl computes the padding of a map whose divisors are constants; a symbolic divisor makes the map
non-affine, so isl cannot. A map that only splits indices (each index kept whole, or split once
into a quotient and a remainder by one positive divisor) has them in closed form: the quotient
spans `(-E % n + E) // n` (TVM's ceiling division), the remainder `n`, the inverse is
`q * n + r`, and an element is padding exactly when `-E % n != 0 and q == E // n and E % n <= r`
(TVM's predicate for a padded split), each simplified under the function's facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tessel.arith.analyzer import Analyzer
from tessel.ir import builders
from tessel.ir.expr import FloorDiv, FloorMod, PrimExpr, Range, Var
from tessel.ir.structural import same_expr


@dataclass(frozen=True)
class _Split:
    """One initial index split by `divisor`: its quotient and remainder at these final
    positions."""

    divisor: PrimExpr
    quotient: int
    remainder: int


@dataclass(frozen=True)
class SplitMap:
    """A map that keeps or splits each initial index once: `kept[var]` is the final position of
    an index kept whole, `splits[var]` the positions of one split."""

    initial: tuple[Var, ...]
    kept: Mapping[Var, int]
    splits: Mapping[Var, _Split]

    def shape(self, domain: Mapping[Var, Range], analyzer: Analyzer) -> tuple[PrimExpr, ...]:
        """The new buffer's extents: each quotient rounded up (padded), each remainder the
        divisor."""
        extents: dict[int, PrimExpr] = {}
        for var, position in self.kept.items():
            extents[position] = domain[var].extent
        for var, split in self.splits.items():
            extent, divisor = domain[var].extent, split.divisor
            if _divides(divisor, extent, analyzer):
                quotient = analyzer.simplify(builders.floordiv(extent, divisor))
            else:  # kept as TVM writes it: the simplifier would make `-m` into `m * -1`
                quotient = builders.floordiv(
                    builders.add(builders.floormod(builders.neg(extent), divisor), extent), divisor
                )
            extents[split.quotient] = quotient
            extents[split.remainder] = divisor
        return tuple(extents[p] for p in range(len(extents)))

    def inverse_values(self, new_vars: Sequence[Var]) -> tuple[PrimExpr, ...]:
        """Each initial index in terms of the new ones (`q * n + r` for a split)."""
        values = []
        for var in self.initial:
            if var in self.kept:
                values.append(new_vars[self.kept[var]])
            else:
                split = self.splits[var]
                q, r = new_vars[split.quotient], new_vars[split.remainder]
                values.append(builders.add(r, builders.mul(q, split.divisor)))  # TVM's order
        return tuple(values)

    def padding(
        self, domain: Mapping[Var, Range], new_vars: Sequence[Var], analyzer: Analyzer
    ) -> PrimExpr:
        """True exactly on the new elements no old element maps to: in the last, partial group
        of some split, past the old extent (none where the divisor provably divides it)."""
        cases = []
        for var, split in self.splits.items():
            extent, n = domain[var].extent, split.divisor
            if _divides(n, extent, analyzer):
                continue
            q, r = new_vars[split.quotient], new_vars[split.remainder]
            cases.append(
                builders.conjunction(
                    [
                        builders.ne(builders.floormod(builders.neg(extent), n), 0),
                        builders.eq(q, builders.floordiv(extent, n)),
                        builders.le(builders.floormod(extent, n), r),
                    ]
                )
            )
        result = builders.const(False, "bool")
        for case in cases:
            result = builders.logical_or(result, case)
        return result


def _divides(divisor: PrimExpr, extent: PrimExpr, analyzer: Analyzer) -> bool:
    return analyzer.can_prove(builders.eq(builders.floormod(extent, divisor), 0))


def split_map(
    initial: Sequence[Var], final: Sequence[PrimExpr], analyzer: Analyzer
) -> SplitMap | None:
    """The map as a SplitMap when it only keeps or splits its indices, each divisor provably
    positive; None for any other map."""
    roles = _roles(initial, final)
    if roles is None:
        return None
    kept, quotients, remainders = roles
    splits = {}
    for var in initial:
        if var in kept:
            if var in quotients or var in remainders:
                return None
            continue
        if var not in quotients or var not in remainders:
            return None
        (divisor, q), (other, r) = quotients[var], remainders[var]
        if not same_expr(divisor, other) or not analyzer.can_prove(builders.gt(divisor, 0)):
            return None
        splits[var] = _Split(divisor, q, r)
    if not splits:
        return None
    return SplitMap(tuple(initial), kept, splits)


_Parts = dict[Var, tuple[PrimExpr, int]]


def _roles(
    initial: Sequence[Var], final: Sequence[PrimExpr]
) -> tuple[dict[Var, int], _Parts, _Parts] | None:
    """Where each initial index appears: whole, as `i // d`, as `i % d` (with `d` and the final
    position); None if a final index is anything else or an index plays a role twice."""
    kept: dict[Var, int] = {}
    quotients: _Parts = {}
    remainders: _Parts = {}
    for position, index in enumerate(final):
        if isinstance(index, Var) and index in initial:
            if index in kept:
                return None
            kept[index] = position
            continue
        if not (isinstance(index, FloorDiv | FloorMod) and isinstance(index.a, Var)):
            return None
        if index.a not in initial:
            return None
        parts = quotients if isinstance(index, FloorDiv) else remainders
        if index.a in parts:
            return None
        parts[index.a] = (index.b, position)
    return kept, quotients, remainders
