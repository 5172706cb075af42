"""Detecting iterator maps (TVM's DetectIterMap): predicate, rewrite, fuse, then check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map.check import check_mapping
from tessel.arith.iter_map.expr import (
    CHECK_LEVELS,
    CheckLevel,
    IterMapResult,
    IterSumExpr,
    NotIterMapError,
)
from tessel.arith.iter_map.predicate import narrow_ranges, split_predicate
from tessel.arith.iter_map.proof import Prover
from tessel.arith.iter_map.rewrite import IterMapRewriter
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order


def detect_iter_map(
    indices: Sequence[PrimExpr | int],
    input_iters: Mapping[Var, Range],
    predicate: PrimExpr | bool = True,
    check_level: CheckLevel = "surjective",
    analyzer: Analyzer | None = None,
    simplify_trivial_iterators: bool = True,
) -> IterMapResult:
    """Each index as an IterSumExpr over the input iterators, or the reasons it is not one.

    `predicate` (a conjunction of bounds such as `i * 4 + j < 14`) restricts the domain;
    `check_level` is "surjective", "bijective" or "no_check" (see iter_map_check). With
    `simplify_trivial_iterators` (TVM's default) an iterator of extent 1 is its minimum;
    without it, it stays an iterator (a unit loop kept in a binding).
    """
    if check_level not in CHECK_LEVELS:
        raise ValueError(f"check_level must be one of {CHECK_LEVELS}, got {check_level!r}")
    prover = Prover(analyzer if analyzer is not None else Analyzer())
    try:
        sums = _detect(
            indices,
            input_iters,
            builders.convert(predicate),
            check_level,
            prover,
            simplify_trivial_iterators,
        )
    except NotIterMapError as err:
        return IterMapResult(errors=(str(err),))
    return IterMapResult(indices=sums)


def _detect(
    indices: Sequence[PrimExpr | int],
    input_iters: Mapping[Var, Range],
    predicate: PrimExpr,
    check_level: str,
    prover: Prover,
    simplify_trivial_iterators: bool = True,
) -> tuple[IterSumExpr, ...]:
    _check_independent(input_iters)
    constraints = split_predicate(predicate, input_iters)
    ranges, constraints = narrow_ranges(input_iters, constraints, prover)
    rewriter = IterMapRewriter(ranges, prover, simplify_trivial_iterators)
    for constraint in sorted(constraints, key=lambda c: c.size):
        try:
            rewriter.rewrite_constraint(constraint.expr, constraint.lower, constraint.upper)
        except NotIterMapError as err:
            raise NotIterMapError(f"predicate `{predicate}`: {err}") from err
    rewriter.fuser.check_constraints()
    sums = tuple(_rewrite_index(rewriter, builders.convert(index)) for index in indices)
    if check_level != "no_check":
        check_mapping(sums, rewriter.input_marks, check_level == "bijective", prover)
    return sums


def _rewrite_index(rewriter: IterMapRewriter, index: PrimExpr) -> IterSumExpr:
    try:
        return rewriter.rewrite(index)
    except NotIterMapError as err:
        reason = str(err)
        if reason.startswith(f"`{index}`"):  # the index itself is the culprit: name it once
            raise NotIterMapError(f"index {reason}") from err
        raise NotIterMapError(f"index `{index}`: {reason}") from err


def _check_independent(input_iters: Mapping[Var, Range]) -> None:
    """Ranges may not depend on the iterators themselves."""
    for var, dom in input_iters.items():
        for bound in (dom.min, dom.extent):
            used = [n for n in post_order(bound) if isinstance(n, Var) and n in input_iters]
            if used:
                raise NotIterMapError(
                    f"the range of `{var.name}` depends on the iterator `{used[0].name}`"
                )
