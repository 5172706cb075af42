"""Regions as compute_at sees them: the hull of a block's accesses over the loops inside the
target loop, whether that hull is exactly what a producer wrote, and the block iterator values
whose accesses cover (or lie within) a region.

reverse_compute_at lets a consumer read, in one iteration, the hull of what the producers under
the loop wrote in it. That is only sound when the writes fill the hull: a write through a
strided layout (`T2[i1 * 16 + i2]` under loop i2 writes two elements 16 apart) leaves holes the
consumer would read before anything wrote them (fuzz seed 7, case 724), as does the union of two
producers' boxes that is not itself a box.
"""

from __future__ import annotations

from tessel.arith import Analyzer, IntSet
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.substitute import substitute
from tessel.tir.block import IterVar


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
    affine = affine_steps(analyzer, rng.min, {v: inner[v] for v in used})
    if affine is None or not all(isinstance(step, IntImm) for step in affine[1]):
        return False
    terms = [(1, rng.extent.value)]  # type: ignore[union-attr]  # an IntImm (fills_hull)
    terms += [(abs(step.value), size) for step, size in zip(affine[1], sizes, strict=True)]  # type: ignore[union-attr]  # IntImm, checked above
    span = 0
    for step, size in sorted(t for t in terms if t[0] != 0 and t[1] > 1):
        if step > span + 1:
            return True
        span += step * (size - 1)
    return False


def affine_steps(
    analyzer: Analyzer, expr: PrimExpr, ranges: dict[Var, Range]
) -> tuple[PrimExpr, list[PrimExpr]] | None:
    """`expr` as `base + sum(step_v * (v - min_v))` over the variables of `ranges` (in their
    order): (base, steps), or None when it is not affine in them."""
    start = {v: rng.min for v, rng in ranges.items()}
    base = analyzer.simplify(substitute(expr, start))
    steps, linear = [], base
    for v, rng in ranges.items():
        moved = substitute(expr, {**start, v: builders.add(rng.min, 1)})
        step = analyzer.simplify(builders.sub(moved, base))
        steps.append(step)
        linear = builders.add(linear, builders.mul(step, builders.sub(v, rng.min)))
    return (base, steps) if analyzer.can_prove_equal(expr, linear) else None


def within(analyzer: Analyzer, inner: IntSet, outer: IntSet) -> bool:
    """Whether `inner` provably lies within `outer` (an unbounded side of `outer` holds all)."""
    ends = (
        (outer.min_value, inner.min_value, builders.ge),
        (outer.max_value, inner.max_value, builders.le),
    )
    for bound, value, compare in ends:
        if bound is None:
            continue
        if value is None or not analyzer.can_prove(compare(value, bound)):
            return False
    return True


def solve_iterator(
    analyzer: Analyzer, rng: Range, need: IntSet, iter_vars: dict[Var, IterVar], cover: bool
) -> tuple[Var, IntSet] | None:
    """For a dimension `[a * v + c, a * v + c + e)` (a > 0 and e constant), the values of v whose
    accesses cover `need` (compute_at) or lie within it (reverse_compute_at)."""
    used = {id(n): n for n in post_order(rng.min) if isinstance(n, Var) and n in iter_vars}
    if len(used) != 1 or not isinstance(rng.extent, IntImm):
        return None
    var = next(iter(used.values()))
    offset = analyzer.simplify(substitute(rng.min, {var: builders.const(0, var.dtype)}))
    scale = analyzer.simplify(
        builders.sub(substitute(rng.min, {var: builders.const(1, var.dtype)}), offset)
    )
    if not isinstance(scale, IntImm) or scale.value <= 0 or _mentions(offset, iter_vars):
        return None
    if not analyzer.can_prove_equal(rng.min, builders.add(builders.mul(var, scale), offset)):
        return None
    if need.min_value is None or need.max_value is None:
        return var, IntSet.everything()
    slack = rng.extent.value - 1
    lo = builders.sub(need.min_value, offset)
    hi = builders.sub(need.max_value, offset)
    lo, hi = (builders.sub(lo, slack), hi) if cover else (lo, builders.sub(hi, slack))
    first = builders.floordiv(builders.add(lo, scale.value - 1), scale.value)  # ceil(lo / a)
    return var, IntSet(
        analyzer.simplify(first), analyzer.simplify(builders.floordiv(hi, scale.value))
    )


def _mentions(expr: PrimExpr, variables: dict[Var, IterVar]) -> bool:
    return any(isinstance(n, Var) and n in variables for n in post_order(expr))


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
