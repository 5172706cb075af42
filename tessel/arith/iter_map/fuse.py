"""Fusing a sum of splits into one iterator, and the marks that predicates bound.

`i * 8 + j` (j in [0, 8)) is one iterator over [0, 32) when i in [0, 4): the sum becomes a single
split of a new mark whose source is the sum. Marks are remembered by the flattened splits they
fuse, so `(i * 8 + j) // 4` and `(i * 8 + j) % 4` split the same mark. A predicate
`lower <= i * 4 + j < upper` narrows such a mark (TVM's predicate-based detection): the mark then
ranges over [0, upper - lower) and its source is shifted by `lower`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tessel.arith.iter_map.expr import (
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    NotIterMapError,
    full_split,
)
from tessel.arith.iter_map.proof import Prover
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr

Splits = tuple[IterSplitExpr, ...]


@dataclass(slots=True)
class FusedMark:
    """A fused mark and what it fuses: value of `flattened` == value of `mark` + `offset`."""

    flattened: Splits  # outermost first, scales relative to the innermost
    mark: IterMark
    offset: PrimExpr


@dataclass(slots=True)
class _Chain:
    """A fuse being built: flattened and grouped splits (innermost first), extent so far."""

    flattened: list[IterSplitExpr]
    grouped: list[IterSplitExpr]
    extent: PrimExpr
    offset: PrimExpr


class Fuser:
    """Fuses sums into marks, remembering each so that equal sums share a mark."""

    def __init__(self, prover: Prover) -> None:
        self.prover = prover
        self.fused: list[FusedMark] = []
        self.constraints: list[Splits] = []  # flattened forms of the predicate-bounded marks

    def fuse(self, total: IterSumExpr, *, force: bool = False) -> IterSumExpr:
        """`total` as one split (of a fused mark) plus a base; raises NotIterMapError."""
        args = combine_same_source(total.args, self.prover)
        if not args:
            return IterSumExpr((), total.base)
        if len(args) == 1 and not force and self._constraint_at(args[0]) is None:
            return IterSumExpr(args, total.base)
        base_index = _base_index(args)
        base_scale = args[base_index].scale
        chain = self._chain(args, base_index, base_scale, total)
        flattened = tuple(reversed(chain.flattened))
        entry = self.find(flattened)
        if entry is None:
            source = IterSumExpr(tuple(reversed(chain.grouped)), builders.const(0, total.dtype))
            entry = FusedMark(flattened, IterMark(source, chain.extent), chain.offset)
            self.fused.append(entry)
        elif not self.prover.equal(chain.offset, entry.offset):
            raise NotIterMapError(f"`{total}` meets a bounded iterator at an inconsistent offset")
        extra = builders.mul(chain.offset, base_scale)
        return IterSumExpr((full_split(entry.mark, base_scale),), builders.add(total.base, extra))

    def constrain(self, total: IterSumExpr, lower: PrimExpr | None, upper: PrimExpr | None) -> None:
        """Record `lower <= total < upper` by narrowing the mark `total` fuses into."""
        base = total.base
        fused = self.fuse(IterSumExpr(total.args, builders.const(0, total.dtype)), force=True)
        split = fused.args[0]
        if not builders.is_const_int(split.scale, 1):
            raise NotIterMapError(f"the predicate bounds `{total}`, which is not a dense iterator")
        entry = next(e for e in self.fused if e.mark is split.source)
        low, high = entry.offset, builders.add(entry.offset, entry.mark.extent)
        if lower is not None:
            low = self.prover.simplify(builders.max_value(builders.sub(lower, base), low))
        if upper is not None:
            high = self._upper(builders.sub(upper, base), high)
        delta = self.prover.simplify(builders.sub(low, entry.offset))
        source = entry.mark.source
        assert isinstance(source, IterSumExpr)  # fused marks always have sum sources
        shifted = IterSumExpr(source.args, builders.sub(source.base, delta))
        extent = self.prover.simplify(builders.sub(high, low))
        if isinstance(extent, IntImm) and extent.value <= 0:
            raise NotIterMapError(f"the predicate leaves no value of `{total}`")
        entry.mark = IterMark(shifted, extent)
        entry.offset = low
        self.constraints.append(entry.flattened)

    def check_constraints(self) -> None:
        """Two bounded sums must nest or be disjoint (TVM's rule); raises NotIterMapError."""
        for index, first in enumerate(self.constraints):
            for second in self.constraints[index + 1 :]:
                shared = [any(self.same_split(a, b) for b in second) for a in first]
                if any(shared) and not all(shared):
                    raise NotIterMapError("the predicate bounds sums that overlap without nesting")

    def find(self, flattened: Splits) -> FusedMark | None:
        """The fused mark of exactly these flattened splits, if one was made."""
        for entry in self.fused:
            if len(entry.flattened) == len(flattened) and all(
                self.same_split(a, b) for a, b in zip(entry.flattened, flattened, strict=True)
            ):
                return entry
        return None

    def same_split(self, a: IterSplitExpr, b: IterSplitExpr, *, check_scale: bool = True) -> bool:
        """The same digit of the same mark (with the same scale, unless told otherwise)."""
        equal = self.prover.equal
        return (
            a.source is b.source
            and equal(a.lower_factor, b.lower_factor)
            and equal(a.extent, b.extent)
            and (not check_scale or equal(a.scale, b.scale))
        )

    def _upper(self, upper: PrimExpr, high: PrimExpr) -> PrimExpr:
        # a predicate usually narrows the sum, so prefer its bound when that is provable
        if self.prover.prove(builders.le(upper, high)):
            return self.prover.simplify(upper)
        return self.prover.simplify(builders.min_value(upper, high))

    def _chain(
        self, args: Splits, base_index: int, base_scale: PrimExpr, total: IterSumExpr
    ) -> _Chain:
        one = builders.const(1, total.dtype)
        chain = _Chain([], [], one, builders.const(0, total.dtype))
        taken = [False] * len(args)
        position: int | None = base_index
        while position is not None:
            constraint = self._constraint_at(args[position])
            if constraint is None:
                _take(chain, args[position], position, taken)
            else:
                self._take_constraint(chain, args, taken, constraint, base_scale, total)
            if all(taken):
                return chain
            expected = builders.mul(chain.extent, base_scale)
            position = self._find_scale(args, taken, expected)
        raise NotIterMapError(
            f"`{total}` cannot be fused into one iterator: no term has scale "
            f"{builders.mul(chain.extent, base_scale)} to continue the terms that span "
            f"{chain.extent} values"
        )

    def _take_constraint(
        self,
        chain: _Chain,
        args: Splits,
        taken: list[bool],
        constraint: Splits,
        base_scale: PrimExpr,
        total: IterSumExpr,
    ) -> None:
        scale = builders.mul(chain.extent, base_scale)
        for part in reversed(constraint):
            wanted = builders.mul(part.scale, scale)
            position = next(
                (
                    k
                    for k, arg in enumerate(args)
                    if not taken[k]
                    and self.same_split(arg, part, check_scale=False)
                    and self.prover.equal(arg.scale, wanted)
                ),
                None,
            )
            if position is None:
                bounded = IterSumExpr(constraint, builders.const(0, total.dtype))
                raise NotIterMapError(
                    f"`{total}` uses only part of `{bounded}`, a sum the predicate bounds"
                )
            taken[position] = True
            chain.flattened.append(
                _with_scale(args[position], builders.mul(part.scale, chain.extent))
            )
        entry = self.find(constraint)
        assert entry is not None  # constraints are recorded only for fused marks
        chain.grouped.append(full_split(entry.mark, chain.extent))
        chain.offset = builders.add(chain.offset, builders.mul(entry.offset, chain.extent))
        chain.extent = self.prover.simplify(builders.mul(chain.extent, entry.mark.extent))

    def _constraint_at(self, split: IterSplitExpr) -> Splits | None:
        """The longest bounded sum whose innermost digit is `split`."""
        best = None
        for constraint in self.constraints:
            if self.same_split(constraint[-1], split, check_scale=False) and (
                best is None or len(constraint) > len(best)
            ):
                best = constraint
        return best

    def _find_scale(self, args: Splits, taken: list[bool], scale: PrimExpr) -> int | None:
        """An unused term with exactly `scale`, unit extents first (they keep the scale)."""
        found = None
        for k, arg in enumerate(args):
            if not taken[k] and self.prover.equal(arg.scale, scale):
                if builders.is_const_int(arg.extent, 1):
                    return k
                found = k if found is None else found
        return found


def _take(chain: _Chain, arg: IterSplitExpr, position: int, taken: list[bool]) -> None:
    taken[position] = True
    split = _with_scale(arg, chain.extent)
    chain.flattened.append(split)
    chain.grouped.append(split)
    chain.extent = builders.mul(chain.extent, arg.extent)


def _with_scale(split: IterSplitExpr, scale: PrimExpr) -> IterSplitExpr:
    return IterSplitExpr(split.source, split.lower_factor, split.extent, scale)


def _base_index(args: Sequence[IterSplitExpr]) -> int:
    """The term with the smallest constant scale (unit extents win ties); else the first."""
    best, best_key = 0, None
    for k, arg in enumerate(args):
        if isinstance(arg.scale, IntImm):
            key = (arg.scale.value, not builders.is_const_int(arg.extent, 1))
            if best_key is None or key < best_key:
                best, best_key = k, key
    return best


def combine_same_source(args: Sequence[IterSplitExpr], prover: Prover) -> Splits:
    """Merge adjacent digits of one mark: `(x // 4) % 2 * 4 + x % 4` is `x % 8`."""
    merged = list(args)
    while True:
        pair = _adjacent_pair(merged, prover)
        if pair is None:
            return tuple(merged)
        high, low = pair
        combined = IterSplitExpr(
            merged[low].source,
            merged[low].lower_factor,
            builders.mul(merged[high].extent, merged[low].extent),
            merged[low].scale,
        )
        merged[low] = combined
        del merged[high]


def _adjacent_pair(args: list[IterSplitExpr], prover: Prover) -> tuple[int, int] | None:
    """(high, low) positions of two digits of one mark that sit next to each other."""
    for low, lower in enumerate(args):
        for high, upper in enumerate(args):
            if high == low or upper.source is not lower.source:
                continue
            if prover.equal(
                upper.lower_factor, builders.mul(lower.lower_factor, lower.extent)
            ) and prover.equal(upper.scale, builders.mul(lower.scale, lower.extent)):
                return high, low
    return None
