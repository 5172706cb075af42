"""SimplifyExpr: each rule as Before/Expected, its law checked on random inputs, and its name
in the trace."""

import numpy as np
import pytest
from graph_pass_checks import check_pass

from tessel.graph import Call, Constant, Function, TensorType, Var, parse
from tessel.graph.passes import InferType, SimplifyExpr
from tessel.graph.passes.simplify_expr import RULES, simplify
from tessel.ir.expr import Op
from tessel.ir.module import IRModule

CASES = {
    "reshape-reshape": (
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          %0 = reshape(%x, newshape=[6, 4]);
          %1 = reshape(%0, newshape=[4, -1]);
          exp(%1)
        }""",
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          %0 = reshape(%x, newshape=[4, 6]);
          exp(%0)
        }""",
    ),
    "reshape-same-shape": (
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = reshape(%x, newshape=[-1, 3]);
          exp(%0)
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) { exp(%x) }""",
    ),
    "transpose-transpose": (
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          %0 = transpose(%x, axes=[1, 0, 2]);
          %1 = transpose(%0, axes=[0, -1, 1]);
          exp(%1)
        }""",
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          %0 = transpose(%x, axes=[1, 2, 0]);
          exp(%0)
        }""",
    ),
    "transpose-identity": (
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = transpose(%x, axes=[0, 1]);
          exp(%0)
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) { exp(%x) }""",
    ),
    "cast-same-dtype": (
        """def @main(%x: Tensor[(2, 3), int32]) {
          %0 = cast(%x, dtype="int32");
          %1 = cast(%0, dtype="float32");
          exp(%1)
        }""",
        """def @main(%x: Tensor[(2, 3), int32]) {
          %0 = cast(%x, dtype="float32");
          exp(%0)
        }""",
    ),
    "expand-dims-squeeze": (
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = expand_dims(%x, axis=-2, num_newaxis=2);
          %1 = squeeze(%0, axis=[2, -3]);
          exp(%1)
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) { exp(%x) }""",
    ),
    "power-small-integer": (
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = power(%x, 3f);
          %1 = power(%x, 2f);
          add(%0, %1)
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = multiply(%x, %x);
          %1 = multiply(%0, %x);
          %2 = multiply(%x, %x);
          add(%1, %2)
        }""",
    ),
}


def test_every_rule_has_a_case():
    assert sorted(CASES) == sorted(rule.name for rule in RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule(rule):
    before, expected = CASES[rule]
    check_pass(SimplifyExpr(), before, expected)
    _, fired = simplify(InferType()(parse(before))["main"])
    assert rule in fired


def test_transposes_that_cancel_disappear_and_rules_chain():
    before = """
    def @main(%x: Tensor[(2, 3, 4), float32]) {
      %0 = transpose(%x, axes=[2, 0, 1]);
      %1 = transpose(%0, axes=[1, 2, 0]);
      %2 = reshape(%1, newshape=[6, 4]);
      %3 = reshape(%2, newshape=[2, 3, 4]);
      %4 = cast(%3, dtype="float32");
      negative(%4)
    }"""
    expected = """
    def @main(%x: Tensor[(2, 3, 4), float32]) { negative(%x) }
    """
    check_pass(SimplifyExpr(), before, expected)
    _, fired = simplify(InferType()(parse(before))["main"])
    assert fired == [
        "transpose-transpose",
        "reshape-reshape",
        "reshape-same-shape",
        "cast-same-dtype",
    ]


def test_transpose_with_default_axes_composes():
    before = """
    def @main(%x: Tensor[(2, 3, 4), float32]) {
      %0 = transpose(%x);
      %1 = transpose(%0, axes=[0, 2, 1]);
      exp(%1)
    }"""
    expected = """
    def @main(%x: Tensor[(2, 3, 4), float32]) {
      %0 = transpose(%x, axes=[2, 0, 1]);
      exp(%0)
    }"""
    check_pass(SimplifyExpr(), before, expected)


@pytest.mark.parametrize(
    "body",
    [
        'cast(%x, dtype="float16")',  # a real conversion
        "reshape(%x, newshape=[3, 2, 1])",  # a real reshape
        "%0 = expand_dims(%x, axis=1); squeeze(%0, axis=[0])",  # squeezes another axis
        "%0 = transpose(%x, axes=[1, 0, 2]); reshape(%0, newshape=[2, 3])",  # different ops
        "power(%x, 2.5f)",  # not 2 or 3
        "power(%x, %x)",  # not a constant
    ],
)
def test_what_is_not_a_round_trip_stays(body):
    check_pass(SimplifyExpr(), f"def @main(%x: Tensor[(1, 2, 3), float32]) {{ {body} }}")


def test_squeeze_of_all_unit_axes_is_removed_only_without_other_unit_axes():
    removed = """
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = expand_dims(%x, axis=1);
      squeeze(%0)
    }"""
    kept = removed.replace("(2, 3)", "(2, 1)")
    check_pass(SimplifyExpr(), removed, "def @main(%x: Tensor[(2, 3), float32]) { %x }")
    check_pass(SimplifyExpr(), kept)


def test_shared_inner_reshape_stays_for_its_other_reader():
    before = """
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = reshape(%x, newshape=[6]);
      %1 = reshape(%0, newshape=[3, 2]);
      (%0, %1)
    }"""
    expected = """
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = reshape(%x, newshape=[6]);
      %1 = reshape(%x, newshape=[3, 2]);
      (%0, %1)
    }"""
    check_pass(SimplifyExpr(), before, expected)


def test_a_power_whose_exponent_broadcasts_its_base_stays():
    """x of (2, 3) to the power of a constant 3 of shape (1, 1, 1): the result is (1, 2, 3), so
    x * x * x (a (2, 3)) would not be it."""
    x = Var("x", TensorType((2, 3), "float32"))
    exponent = Constant(np.full((1, 1, 1), 3, np.float32))
    mod = InferType()(IRModule.from_func(Function((x,), Call(Op("power"), (x, exponent)))))
    after, fired = simplify(mod["main"])
    assert "power-small-integer" not in fired
    assert after is mod["main"]
