"""Dividing bindings into an outer and an inner subspace (TVM's SubspaceDivide, for blockize).

Each binding becomes `outer * inner_extent + inner`, where `outer` uses only the outer iterators
and `inner` only `sub_iters`. Division flows up from the input iterators: a fused sum divides
when its inner-subspace terms are all below its outer ones; a split of a divided mark goes to the
side its digits lie in, or to both when it straddles the boundary (then it contributes a digit
of each side, which TVM refuses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map.check import MarkSplits, collect_splits
from tessel.arith.iter_map.detect import detect_iter_map
from tessel.arith.iter_map.expr import (
    CheckLevel,
    IterMapExpr,
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    NotIterMapError,
    input_var_of,
    normalize_iter_map_to_expr,
)
from tessel.arith.iter_map.proof import Prover
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.support.dtype import DataType


@dataclass(frozen=True, slots=True)
class _Division:
    """`outer * inner_extent + inner`; kind says whether one side is trivially zero."""

    outer: IterMapExpr
    outer_extent: PrimExpr
    inner: IterMapExpr
    inner_extent: PrimExpr
    kind: str  # "outer", "inner" or "mixed"


def _zero(dtype: DataType) -> IterSumExpr:
    return IterSumExpr((), builders.const(0, dtype))


def _inner(expr: IterMapExpr, extent: PrimExpr) -> _Division:
    return _Division(_zero(expr.dtype), builders.const(1, extent.dtype), expr, extent, "inner")


def _outer(expr: IterMapExpr, extent: PrimExpr) -> _Division:
    return _Division(expr, extent, _zero(expr.dtype), builders.const(1, extent.dtype), "outer")


def subspace_divide(
    bindings: Sequence[PrimExpr],
    input_iters: Mapping[Var, Range],
    sub_iters: Sequence[Var],
    predicate: PrimExpr | bool = True,
    check_level: CheckLevel = "surjective",
    analyzer: Analyzer | None = None,
    preserve_unit_iters: bool = False,
) -> list[tuple[IterMark, IterMark]]:
    """(outer, inner) marks per binding, then (outer predicate, inner predicate); [] if impossible.

    As in TVM, each mark's source is the part (an IterSumExpr) and its extent the part's extent;
    the last pair carries the predicates each subspace needs in its extent field. With
    `preserve_unit_iters` a loop of extent 1 stays in the parts it binds.
    """
    analyzer = analyzer if analyzer is not None else Analyzer()
    detected = detect_iter_map(
        bindings,
        input_iters,
        predicate,
        check_level,
        analyzer,
        simplify_trivial_iterators=not preserve_unit_iters,
    )
    if not detected:
        return []
    divider = _Divider(collect_splits(detected.indices), set(sub_iters), Prover(analyzer))
    pairs = []
    try:
        for index in detected.indices:
            part = divider.divide_sum(index, None)
            pairs.append(
                (
                    _part_mark(part.outer, part.outer_extent),
                    _part_mark(part.inner, part.inner_extent),
                )
            )
    except NotIterMapError:
        return []
    zero = builders.const(0, detected.indices[0].dtype if detected.indices else "int32")
    pairs.append(
        (
            IterMark(IterSumExpr((), zero), divider.outer_predicate),
            IterMark(IterSumExpr((), zero), divider.inner_predicate),
        )
    )
    return pairs


def _as_split(expr: IterMapExpr, extent: PrimExpr) -> IterSplitExpr:
    if isinstance(expr, IterSplitExpr):
        return expr
    one = builders.const(1, extent.dtype)
    return IterSplitExpr(IterMark(expr, extent), one, extent, one)


class _Divider:
    """Divides sums and splits, remembering the division of every split it has seen."""

    def __init__(self, splits: MarkSplits, sub_iters: set[Var], prover: Prover) -> None:
        self.splits = splits
        self.sub_iters = sub_iters
        self.prover = prover
        self.memo: dict[int, _Division] = {}
        self.outer_predicate: PrimExpr = builders.const(True)
        self.inner_predicate: PrimExpr = builders.const(True)

    def divide_sum(self, total: IterSumExpr, mark_extent: PrimExpr | None) -> _Division:
        """Divide a sum: an index (mark_extent None) or the source of a fused mark."""
        if not total.args:
            one = builders.const(1, total.dtype)
            return _Division(_zero(total.dtype), one, IterSumExpr((), total.base), one, "mixed")
        if len(total.args) == 1:
            if not builders.is_const_int(total.args[0].scale, 1):
                raise NotIterMapError(f"`{total}` is scaled")
            return self._divide_single(total, mark_extent)
        return self._divide_fused(total, mark_extent)

    def _divide_single(self, total: IterSumExpr, mark_extent: PrimExpr | None) -> _Division:
        """Divide a sum of one split; a fused mark's predicate bound must not be lost."""
        part = _add_base(self.divide_split(total.args[0]), total.base)
        extent = builders.mul(part.outer_extent, part.inner_extent)
        if mark_extent is None or self.prover.equal(extent, mark_extent):
            return part
        if not builders.is_const_int(total.base, 0):
            raise NotIterMapError(f"the bound on `{total}` applies to a shifted split")
        outer = _part_mark(part.outer, part.outer_extent)
        inner = _part_mark(part.inner, part.inner_extent)
        return self._bounded(outer, inner, mark_extent, total)

    def _divide_fused(self, total: IterSumExpr, mark_extent: PrimExpr | None) -> _Division:
        outer_args: list[IterSplitExpr] = []
        inner_args: list[IterSplitExpr] = []
        for arg in reversed(total.args):  # innermost first
            part = self.divide_split(arg)
            if part.kind == "inner" and not outer_args:
                inner_args.append(_as_split(part.inner, part.inner_extent))
            elif part.kind == "outer":
                outer_args.append(_as_split(part.outer, part.outer_extent))
            else:
                raise NotIterMapError(f"`{total}` interleaves the subspaces")
        outer_mark = _mark_of(outer_args, builders.const(0, total.dtype))
        inner_mark = _mark_of(inner_args, total.base)
        extent = builders.mul(outer_mark.extent, inner_mark.extent)
        if mark_extent is not None and not self.prover.equal(extent, mark_extent):
            return self._bounded(outer_mark, inner_mark, mark_extent, total)
        kind = "inner" if not outer_args else "outer" if not inner_args else "mixed"
        assert isinstance(outer_mark.source, IterSumExpr)
        assert isinstance(inner_mark.source, IterSumExpr)
        return _Division(
            outer_mark.source, outer_mark.extent, inner_mark.source, inner_mark.extent, kind
        )

    def _bounded(
        self, outer: IterMark, inner: IterMark, mark_extent: PrimExpr, total: IterSumExpr
    ) -> _Division:
        """A predicate-bounded fused mark must lie in one subspace, which takes the predicate."""
        outer_used = bool(outer.source.args) if isinstance(outer.source, IterSumExpr) else True
        inner_used = bool(inner.source.args) if isinstance(inner.source, IterSumExpr) else True
        if outer_used and inner_used:
            raise NotIterMapError(f"the bound on `{total}` spans both subspaces")
        if inner_used:
            value = normalize_iter_map_to_expr(inner.source)
            self.inner_predicate = builders.logical_and(
                self.inner_predicate, builders.lt(value, mark_extent)
            )
            assert isinstance(inner.source, IterSumExpr)
            return _inner(inner.source, mark_extent)
        value = normalize_iter_map_to_expr(outer.source)
        self.outer_predicate = builders.logical_and(
            self.outer_predicate, builders.lt(value, mark_extent)
        )
        assert isinstance(outer.source, IterSumExpr)
        return _outer(outer.source, mark_extent)

    def divide_split(self, split: IterSplitExpr) -> _Division:
        """Divide a split, dividing all the splits of its mark together on first sight."""
        if id(split) not in self.memo:
            self._divide_mark(split.source)
        if id(split) not in self.memo:
            raise NotIterMapError(f"`{split}` was not collected")
        return self.memo[id(split)]

    def _divide_mark(self, mark: IterMark) -> None:
        _, splits = self.splits[id(mark)]
        if not isinstance(mark.source, IterSumExpr):
            var_and_min = input_var_of(mark)
            inner = var_and_min is not None and var_and_min[0] in self.sub_iters
            for split in splits:
                self.memo[id(split)] = (
                    _inner(split, split.extent) if inner else _outer(split, split.extent)
                )
            return
        whole = self.divide_sum(mark.source, mark.extent)
        parts = _Parts(
            whole,
            _part_mark(whole.outer, whole.outer_extent),
            _part_mark(whole.inner, whole.inner_extent),
        )
        for split in splits:
            self.memo[id(split)] = self._divide_digit(split, mark, parts)

    def _divide_digit(self, split: IterSplitExpr, mark: IterMark, parts: _Parts) -> _Division:
        """The part of the mark (= outer * B + inner) that one digit of it takes."""
        prover, whole = self.prover, parts.whole
        boundary = whole.inner_extent  # B
        low, extent, scale = split.lower_factor, split.extent, split.scale
        high = builders.mul(low, extent)
        if builders.is_const_int(low, 1) and prover.equal(extent, mark.extent):
            return whole
        if prover.divisible(boundary, high):  # all its digits are inner
            return _inner(IterSplitExpr(parts.inner, low, extent, scale), extent)
        if prover.divisible(low, boundary):  # all its digits are outer
            lower = prover.quotient(low, boundary)
            return _outer(IterSplitExpr(parts.outer, lower, extent, scale), extent)
        if prover.divisible(boundary, low) and prover.divisible(high, boundary):
            # (M // low) % extent = (Y % (high / B)) * (B / low) + X // low, for M = Y * B + X
            inner_extent = prover.quotient(boundary, low)
            outer_extent = prover.quotient(high, boundary)
            one = builders.const(1, extent.dtype)
            inner = IterSplitExpr(parts.inner, low, inner_extent, one)
            outer = IterSplitExpr(parts.outer, one, outer_extent, one)
            return _Division(outer, outer_extent, inner, inner_extent, "mixed")
        raise NotIterMapError(f"`{split}` does not align with the subspace boundary {boundary}")


@dataclass(frozen=True, slots=True)
class _Parts:
    """A divided fused mark and the marks of its two parts, shared by all its digits."""

    whole: _Division
    outer: IterMark
    inner: IterMark


def _part_mark(part: IterMapExpr, extent: PrimExpr) -> IterMark:
    source = part if isinstance(part, IterSumExpr) else IterSumExpr((part,), _zero(part.dtype).base)
    return IterMark(source, extent)


def _mark_of(args: list[IterSplitExpr], base: PrimExpr) -> IterMark:
    """The mark fusing `args` (innermost first) with scales rebuilt from their extents."""
    scale: PrimExpr = builders.const(1, base.dtype)
    rebuilt = []
    for arg in args:
        rebuilt.append(IterSplitExpr(arg.source, arg.lower_factor, arg.extent, scale))
        scale = builders.mul(scale, arg.extent)
    return IterMark(IterSumExpr(tuple(reversed(rebuilt)), base), scale)


def _add_base(part: _Division, base: PrimExpr) -> _Division:
    if builders.is_const_int(base, 0):
        return part
    inner = part.inner
    if isinstance(inner, IterSumExpr):
        shifted = IterSumExpr(inner.args, builders.add(inner.base, base))
    else:
        shifted = IterSumExpr((inner,), base)
    kind = "mixed" if part.kind == "outer" else part.kind
    return _Division(part.outer, part.outer_extent, shifted, part.inner_extent, kind)
