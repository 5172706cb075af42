"""The ONNX importer folds known inputs of the elementwise operators with the semantics table the
graph computes them with (tessel.graph.op.elementwise_semantics): a folded node gives what
onnxruntime and the compiled graph give, integer Div truncating and Mod's fmod=0 / fmod=1
rounding as ONNX defines them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx_testing import (
    calls,
    check_against_onnxruntime,
    evaluate_main,
    make_model,
    run_onnxruntime,
    tensor,
)

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.converters.elementwise import BINARY, UNARY, VARIADIC

_DIVIDENDS = np.array([-7, 7, -7, 7, -8, 0, 9], "int32")
_DIVISORS = np.array([2, 2, -2, -2, 3, 5, -4], "int32")


def _operands(op_type: str, count: int) -> list[np.ndarray]:
    """Operands `op_type` takes: bools for the logic ops, signed integers for Div and Mod (the
    rounding rules differ on negative operands), floats for the rest."""
    rng = np.random.default_rng(len(op_type))
    if op_type in ("Not", "And", "Or", "Xor"):
        return [rng.random(7) < 0.5 for _ in range(count)]
    if op_type in ("Div", "Mod"):
        return [_DIVIDENDS, _DIVISORS]
    if op_type in ("Sqrt", "Log", "Reciprocal"):
        return [rng.uniform(0.5, 2.0, 7).astype("float32")]
    return [rng.standard_normal(7).astype("float32") for _ in range(count)]


def _models(op_type: str, operands: list[np.ndarray], **attrs):
    """The node on graph inputs (computed by the graph) and on Constant nodes (folded)."""
    names = [f"x{i}" for i in range(len(operands))]
    elem = [helper.np_dtype_to_tensor_dtype(a.dtype) for a in operands]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    computed = make_model(
        [node],
        [tensor(n, [7], e) for n, e in zip(names, elem, strict=True)],
        [helper.make_empty_tensor_value_info("y")],
    )
    constants = [
        helper.make_node("Constant", [], [n], value=numpy_helper.from_array(a))
        for n, a in zip(names, operands, strict=True)
    ]
    folded = make_model([*constants, node], [], [helper.make_empty_tensor_value_info("y")])
    return computed, folded


def _check_folding_matches_computing(
    op_type: str, operands: list[np.ndarray], compiled: bool = False, **attrs
):
    """Folded (Constant operands) and computed (graph inputs; also as C with `compiled`), the
    node gives onnxruntime's result; the folded result."""
    computed, folded = _models(op_type, operands, **attrs)
    inputs = {f"x{i}": a for i, a in enumerate(operands)}
    check_against_onnxruntime(computed, inputs=inputs, compiled=compiled)
    mod, params = from_onnx(folded)
    assert calls(mod) == []  # folded at import
    (got,) = evaluate_main(mod, params)
    (expected,) = run_onnxruntime(computed, inputs)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    return got


@pytest.mark.parametrize("op_type", [*sorted(UNARY), "Reciprocal"])
def test_folding_a_unary_op_gives_what_the_graph_computes(op_type):
    _check_folding_matches_computing(op_type, _operands(op_type, 1))


@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_folding_a_binary_op_gives_what_the_graph_computes(op_type):
    _check_folding_matches_computing(op_type, _operands(op_type, 2))


@pytest.mark.parametrize("op_type", sorted(VARIADIC))
def test_folding_a_variadic_op_gives_what_the_graph_computes(op_type):
    _check_folding_matches_computing(op_type, _operands(op_type, 3))


def test_integer_div_truncates_toward_zero_folded_or_computed():
    got = _check_folding_matches_computing("Div", [_DIVIDENDS, _DIVISORS], compiled=True)
    np.testing.assert_array_equal(got, [-3, 3, 3, -3, -2, 0, -2])


@pytest.mark.parametrize(
    ("fmod", "expected"),
    [
        (0, [1, 1, -1, -1, 1, 0, -3]),  # the divisor's sign (Python's %)
        (1, [-1, 1, -1, 1, -2, 0, 1]),  # the dividend's sign (C's fmod)
    ],
)
def test_integer_mod_follows_fmod_folded_or_computed(fmod, expected):
    got = _check_folding_matches_computing("Mod", [_DIVIDENDS, _DIVISORS], compiled=True, fmod=fmod)
    np.testing.assert_array_equal(got, expected)
