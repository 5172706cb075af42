"""The simplifier leaves TVM's canonical forms (test_arith_canonical_simplify.py's normal forms,
re-expressed): a middle digit of a fused index is `x % (l * e) // l`, constant factors of a
product fold into one coefficient, and digits in either spelling join back. Each case compares
the exact form and then the value before and after on random points of the variables' ranges."""

from __future__ import annotations

import random

import pytest

from tessel.arith import Analyzer
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.structural import assert_structural_equal
from tessel.testing.arith_strategies import evaluate

x, n = Var("x"), Var("n")

# (id, before, expected, ranges as {var: (min, extent)})
CASES = [
    ("middle-digit", (x // 128) % 128, (x % 16384) // 128, {}),
    ("middle-digit-kept", (x % 16384) // 128, (x % 16384) // 128, {}),
    ("middle-digit-small-index", (x // 128) % 128, x // 128, {x: (0, 16384)}),
    ("constant-factors-fold", n * 128 * 128, n * 16384, {}),
    ("constant-factors-fold-left", 128 * (128 * n), n * 16384, {}),
    ("digit-of-digit", ((x % 16) // 2 * 2) // 4, (x % 16) // 4, {}),
    ("mod-of-scaled-mod", (x * 4 % 16) % 8, x % 2 * 4, {}),
    ("join-three-canonical-digits", (x // 16384) * 16384 + ((x % 16384) // 128) * 128 + x % 128,
     x, {}),
    ("join-three-old-digits", (x // 16384) * 16384 + ((x // 128) % 128) * 128 + x % 128, x, {}),
    ("join-quotient", (x // 16384) * 128 + (x % 16384) // 128, x // 128, {}),
    ("join-remainder", ((x % 16384) // 128) * 128 + x % 128, x % 16384, {}),
]  # fmt: skip


def _analyzer(ranges: dict[Var, tuple[int, int]]) -> Analyzer:
    analyzer = Analyzer()
    for var, (low, extent) in ranges.items():
        analyzer.bind(var, Range.from_min_extent(low, extent))
    return analyzer


def _points(expr: PrimExpr, ranges: dict[Var, tuple[int, int]], seed: str) -> list[dict]:
    rng = random.Random(seed)
    free = [var for var in (x, n) if var in ranges or _mentions(expr, var)]
    points = []
    for _ in range(300):
        point = {}
        for var in free:
            low, extent = ranges.get(var, (-70000, 140000))
            point[var] = rng.randrange(low, low + extent)
        points.append(point)
    return points


def _mentions(expr: PrimExpr, var: Var) -> bool:
    return any(node is var for node in post_order(expr))


@pytest.mark.parametrize(
    ("before", "expected", "ranges"), [pytest.param(b, e, r, id=name) for name, b, e, r in CASES]
)
def test_simplify_leaves_tvm_canonical_form_with_the_same_value(before, expected, ranges):
    after = _analyzer(ranges).simplify(before)
    assert_structural_equal(after, expected)
    for point in _points(before, ranges, str(before)):
        assert evaluate(after, point) == evaluate(before, point), point


def test_the_canonical_digit_is_a_fixpoint():
    analyzer = Analyzer()
    once = analyzer.simplify((x // 8) % 4)
    assert analyzer.simplify(once) is once
