"""Regions as compute_at sees them: the hull of a block's accesses over the loops inside the
target loop, and whether that hull is exactly what a producer wrote.

reverse_compute_at lets a consumer read, in one iteration, the hull of what the producers under
the loop wrote in it. That is only sound when the writes fill the hull: a write through a
strided layout (`T2[i1 * 16 + i2]` under loop i2 writes two elements 16 apart) leaves holes the
consumer would read before anything wrote them (fuzz seed 7, case 724), as does the union of two
producers' boxes that is not itself a box.
"""

from __future__ import annotations

from tessel.arith import Analyzer, IntSet
from tessel.ir import builders
from tessel.ir.expr import IntImm, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.substitute import substitute


def relax_dimension(analyzer: Analyzer, rng: Range, inner: dict[Var, Range]) -> IntSet:
    """The values of a region dimension as the loops inside the target loop run."""
    last = builders.sub(builders.add(rng.min, rng.extent), 1)
    lo = analyzer.int_set(rng.min, inner).min_value
    hi = analyzer.int_set(last, inner).max_value
    return IntSet(lo, hi)


def fills_hull(analyzer: Analyzer, rng: Range, inner: dict[Var, Range]) -> bool:
    """Whether a region dimension `[m, m + e)` may take every value of its hull as the `inner`
    loops run; False when it provably cannot (`_too_few_points`, `_affine_gap`). A non-affine
    index with enough points (a fused loop's `f % 16`) is taken to fill it."""
    used = [v for v in inner if any(n is v for n in post_order(rng.min))]
    if not used or not isinstance(rng.extent, IntImm):
        return True
    counts = [inner[v].extent for v in used]
    if not all(isinstance(c, IntImm) for c in counts):
        return True
    sizes = [c.value for c in counts]  # type: ignore[union-attr]  # IntImm, checked above
    if _too_few_points(analyzer, rng, inner, sizes):
        return False
    return not _affine_gap(analyzer, rng, inner, used, sizes)


def _too_few_points(
    analyzer: Analyzer, rng: Range, inner: dict[Var, Range], sizes: list[int]
) -> bool:
    """True if the loops run fewer points than the hull is wide (so some value is missed)."""
    points = rng.extent.value  # type: ignore[union-attr]  # an IntImm (fills_hull)
    for size in sizes:
        points *= size
    hull = relax_dimension(analyzer, rng, inner)
    if hull.min_value is None or hull.max_value is None:
        return False
    width = analyzer.simplify(builders.sub(builders.add(hull.max_value, 1), hull.min_value))
    return isinstance(width, IntImm) and points < width.value


def _affine_gap(
    analyzer: Analyzer, rng: Range, inner: dict[Var, Range], used: list[Var], sizes: list[int]
) -> bool:
    """True if `m` is affine in the loops with constant steps that skip a value: sorted (the
    extent `e` is one more step of 1), a step more than one beyond the span the smaller ones
    reach (`2 * i + 2 * j` only reaches even values)."""
    start = {v: inner[v].min for v in used}
    base = analyzer.simplify(substitute(rng.min, start))
    linear, terms = base, [(1, rng.extent.value)]  # type: ignore[union-attr]  # IntImm
    for v, size in zip(used, sizes, strict=True):
        moved = substitute(rng.min, {**start, v: builders.add(inner[v].min, 1)})
        step = analyzer.simplify(builders.sub(moved, base))
        if not isinstance(step, IntImm):
            return False
        linear = builders.add(linear, builders.mul(step, builders.sub(v, inner[v].min)))
        terms.append((abs(step.value), size))
    if not analyzer.can_prove_equal(rng.min, linear):
        return False
    span = 0
    for step, size in sorted(t for t in terms if t[0] != 0 and t[1] > 1):
        if step > span + 1:
            return True
        span += step * (size - 1)
    return False


def union_is_box(analyzer: Analyzer, one: list[IntSet], other: list[IntSet]) -> bool:
    """Whether two boxes' union is the box of their hulls: equal in every dimension but at
    most one, where they overlap or touch."""
    differing = 0
    for a, b in zip(one, other, strict=True):
        ends = (a.min_value, a.max_value, b.min_value, b.max_value)
        if any(e is None for e in ends):
            return False
        if analyzer.can_prove_equal(a.min_value, b.min_value) and analyzer.can_prove_equal(
            a.max_value, b.max_value
        ):
            continue
        differing += 1
        touch = builders.logical_and(
            builders.le(a.min_value, builders.add(b.max_value, 1)),
            builders.le(b.min_value, builders.add(a.max_value, 1)),
        )
        if differing > 1 or not analyzer.can_prove(touch):
            return False
    return True
