"""Checking a detected map: the digits taken of every iterator are disjoint and fit together.

Surjective (TVM's semantics): for each mark, the splits taken of it (by the indices, or by fused
marks the indices use) do not overlap, each sits on a digit boundary, and what they cover divides
the mark's extent; every output point is then reached. Bijective: in addition the splits of each
mark cover it exactly, every input iterator is used, and every index is dense (scale ±1), so the
map is one-to-one onto the box of its index extents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from tessel.arith.iter_map.expr import (
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    NotIterMapError,
    mark_name,
)
from tessel.arith.iter_map.proof import Prover
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr

MarkSplits = dict[int, tuple[IterMark, list[IterSplitExpr]]]


def collect_splits(indices: Sequence[IterSumExpr]) -> MarkSplits:
    """Every mark reachable from the indices, with the splits taken of it (keyed by id)."""
    found: MarkSplits = {}
    pending = [arg for index in indices for arg in index.args]
    while pending:
        split = pending.pop(0)
        mark = split.source
        if id(mark) not in found:
            found[id(mark)] = (mark, [])
            if isinstance(mark.source, IterSumExpr):
                pending.extend(mark.source.args)
        found[id(mark)][1].append(split)
    return found


def check_mapping(
    indices: Sequence[IterSumExpr],
    input_marks: Sequence[IterMark],
    bijective: bool,
    prover: Prover,
) -> None:
    """Raise NotIterMapError saying why the map is not surjective (or bijective)."""
    marks = collect_splits(indices)
    for mark, splits in marks.values():
        _check_mark(mark, splits, bijective, prover)
    if not bijective:
        return
    for mark in input_marks:
        if id(mark) not in marks:
            raise NotIterMapError(
                f"the map is not bijective: iterator `{mark_name(mark)}` is not used"
            )
    for index in indices:
        _check_dense(index)


def _check_mark(
    mark: IterMark, splits: list[IterSplitExpr], bijective: bool, prover: Prover
) -> None:
    remaining = list(splits)
    taken: list[IterSplitExpr] = []
    covered: PrimExpr = builders.const(1, mark.dtype)
    while remaining:
        split = _next_digit(mark, remaining, taken, covered, bijective, prover)
        remaining.remove(split)
        taken.append(split)
        covered = builders.mul(split.lower_factor, split.extent)
    if bijective and not prover.equal(covered, mark.extent):
        _uncovered(mark, covered, mark.extent, prover)
    if not prover.divisible(mark.extent, covered):
        raise NotIterMapError(
            f"splits of `{mark_name(mark)}` span {covered} values, "
            f"which does not divide its extent {mark.extent}"
        )


def _next_digit(
    mark: IterMark,
    remaining: list[IterSplitExpr],
    taken: list[IterSplitExpr],
    covered: PrimExpr,
    bijective: bool,
    prover: Prover,
) -> IterSplitExpr:
    """The split that continues the digits covered so far (surjective maps may skip digits)."""
    for split in remaining:
        if prover.equal(split.lower_factor, covered):
            return split
    for split in remaining:
        if taken and prover.prove(builders.lt(split.lower_factor, covered)):
            raise NotIterMapError(
                f"iterator `{mark_name(mark)}` is used twice: `{split}` and `{taken[-1]}` overlap"
            )
    skipped = [s for s in remaining if prover.divisible(s.lower_factor, covered)]
    if len(skipped) != len(remaining):
        raise NotIterMapError(f"splits of `{mark_name(mark)}` do not sit on one digit boundary")
    following = min(skipped, key=_lower_factor_key)
    if bijective:
        _uncovered(mark, covered, following.lower_factor, prover)
    return following


def _uncovered(mark: IterMark, covered: PrimExpr, upto: PrimExpr, prover: Prover) -> NoReturn:
    """Refuse a bijective map that skips the digits of `mark` from `covered` up to `upto`."""
    missing = IterSplitExpr(
        mark, covered, prover.quotient(upto, covered), builders.const(1, mark.dtype)
    )
    raise NotIterMapError(
        f"the map is not bijective: splits of `{mark_name(mark)}` do not cover it "
        f"(nothing takes `{missing}`)"
    )


def _lower_factor_key(split: IterSplitExpr) -> int:
    factor = split.lower_factor
    return factor.value if isinstance(factor, IntImm) else 0


def _check_dense(index: IterSumExpr) -> None:
    for arg in index.args:
        scale = arg.scale
        if not (isinstance(scale, IntImm) and abs(scale.value) == 1):
            raise NotIterMapError(
                f"the map is not bijective: index `{index}` steps by {scale}, "
                "so it does not cover the values in between"
            )
