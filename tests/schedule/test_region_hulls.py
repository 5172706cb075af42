"""region_hulls: whether a region dimension fills its hull over the inner loops, checked
against the values the loops actually produce, and when two boxes' union is a box."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith import Analyzer, IntSet
from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.schedule.primitives.region_hulls import fills_hull, union_is_box


def _inner(extents):
    loops = [Var(f"v{k}", "int32") for k in range(len(extents))]
    return loops, {
        v: Range(builders.const(0), builders.const(e)) for v, e in zip(loops, extents, strict=True)
    }


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.integers(-9, 9), min_size=1, max_size=3),
    extents=st.lists(st.integers(1, 5), min_size=3, max_size=3),
    width=st.integers(1, 4),
)
def test_an_affine_region_fills_its_hull_exactly_when_its_values_leave_no_gap(
    steps, extents, width
):
    loops, inner = _inner(extents[: len(steps)])
    index = builders.const(3)
    for step, v in zip(steps, loops, strict=True):
        index = builders.add(index, builders.mul(builders.const(step), v))
    values = set()
    for point in itertools.product(*(range(e) for e in extents[: len(steps)])):
        start = 3 + sum(s * p for s, p in zip(steps, point, strict=True))
        values.update(range(start, start + width))
    dense = values == set(range(min(values), max(values) + 1))
    rng = Range(index, builders.const(width))
    assert fills_hull(Analyzer(), rng, inner) == dense


def test_the_fuzz_case_strided_write_does_not_fill_its_hull():
    (j,), inner = _inner([2])
    i2 = Var("i2", "int32")  # the target loop: symbolic
    rng = Range(builders.add(builders.mul(j, builders.const(16)), i2), builders.const(1))
    assert not fills_hull(Analyzer(), rng, inner)


def test_a_fused_loops_modulo_is_taken_to_fill_its_hull():
    (f,), inner = _inner([64])
    rng = Range(builders.floormod(f, builders.const(16)), builders.const(1))
    assert fills_hull(Analyzer(), rng, inner)


def test_two_boxes_make_a_box_when_they_differ_in_one_touching_dimension():
    analyzer = Analyzer()

    def box(*bounds):
        return [IntSet(builders.const(lo), builders.const(hi)) for lo, hi in bounds]

    assert union_is_box(analyzer, box((0, 3), (0, 7)), box((0, 3), (8, 15)))
    assert union_is_box(analyzer, box((0, 3), (0, 7)), box((0, 3), (4, 9)))
    assert not union_is_box(analyzer, box((0, 3), (0, 7)), box((0, 3), (9, 15)))  # a gap
    assert not union_is_box(analyzer, box((0, 3), (0, 7)), box((4, 7), (8, 15)))  # two corners
