"""Reduction combiners and the identity/absorbing laws used to decide reduction padding."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.testing.arith_strategies import evaluate, int_exprs
from tessel.tir import builtin
from tessel.tir.analysis.reduction_identity import (
    combiner_of,
    leaves_unchanged,
    simplify_identities,
)

X, Y = E.Var("x", "int32"), E.Var("y", "int32")
ZERO, ONE = builders.const(0, "int32"), builders.const(1, "int32")


def _wrap_with_identities(expr, pick):
    """`expr` combined with an identity element the folder must remove (x+0, x*1, max(x, min))."""
    choices = [
        lambda e: E.Add(e, ZERO),
        lambda e: E.Mul(ONE, e),
        lambda e: E.Max(e, builders.const(-(2**31), "int32")),
        lambda e: E.Min(builders.const(2**31 - 1, "int32"), e),
        lambda e: E.Sub(e, ZERO),
        lambda e: E.Add(e, E.Mul(ZERO, e)),
    ]
    return choices[pick](expr)


@settings(max_examples=100, deadline=None)
@given(
    int_exprs([X, Y], max_depth=2), st.integers(0, 5), st.integers(-50, 50), st.integers(-50, 50)
)
def test_identity_folding_preserves_integer_values(expr, pick, x, y):
    wrapped = _wrap_with_identities(expr, pick)
    folded = simplify_identities(wrapped, Analyzer())
    env = {X: x, Y: y}
    assert evaluate(folded, env) == evaluate(wrapped, env)


@pytest.mark.parametrize(
    ("update", "name"),
    [
        (lambda acc, t: acc + t, "+"),
        (lambda acc, t: t * acc, "*"),
        (lambda acc, t: builders.max_value(acc, t), "max"),
        (lambda acc, t: builders.min_value(t, acc), "min"),
        (lambda acc, t: builtin.bitwise("bitwise_or", acc, t), "bitwise_or"),
    ],
)
def test_combiners_are_recognised_on_either_side(update, name):
    assert combiner_of(update(X, Y), X).name == name


def test_a_term_equal_to_the_identity_leaves_the_accumulator_unchanged():
    f = E.Var("f", "float32")
    zero = builders.const(0.0, "float32")
    lowest = builders.const(float("-inf"), "float32")
    analyzer = Analyzer()
    assert leaves_unchanged(f + zero * E.Var("b", "float32"), f, analyzer)
    assert leaves_unchanged(builders.max_value(f, lowest), f, analyzer)
    assert not leaves_unchanged(
        f + builders.const(1.0, "float32") * E.Var("b", "float32"), f, analyzer
    )
    assert leaves_unchanged(
        builtin.bitwise("bitwise_and", X, builders.const(-1, "int32")), X, analyzer
    )
