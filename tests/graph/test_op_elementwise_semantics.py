"""The elementwise semantics table (tessel.graph.op.elementwise_semantics) is the graph operators'
reference: each operator evaluates as its table entry, and the integer rounding rules (divide
truncates, mod takes the dividend's sign, floor_* round down) hold in the table and in the
compiled C."""

import numpy as np
import pytest
from graph_lowering import lower

from tessel.graph import TensorType
from tessel.graph.op import get_op
from tessel.graph.op.elementwise_semantics import ELEMENTWISE, evaluate
from tessel.testing.topi import check_operator


def _operands(name: str) -> list[np.ndarray]:
    entry = ELEMENTWISE[name]
    rng = np.random.default_rng(len(name))
    if entry.rule is not None and entry.rule.description == "dtype bool":
        return [rng.random((3, 4)) < 0.5 for _ in range(entry.arity)]
    return [rng.uniform(0.5, 2.0, (3, 4)).astype("float32") for _ in range(entry.arity)]


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_the_graph_operator_evaluates_as_its_table_entry(name):
    arrays = _operands(name)
    entry = ELEMENTWISE[name]
    got = get_op(name).evaluate(arrays, {})
    expected = entry.evaluate(*arrays)
    assert got.dtype == expected.dtype == np.dtype(entry.result_dtype or arrays[0].dtype)
    np.testing.assert_array_equal(got, expected)
    assert get_op(name).doc == entry.doc


_A = np.array([-7, 7, -7, 7, -8, 0, 9], "int32")
_B = np.array([2, 2, -2, -2, 3, 5, -4], "int32")
_INTEGER_RULES = {
    "divide": [-3, 3, 3, -3, -2, 0, -2],  # toward zero (C, ONNX Div)
    "floor_divide": [-4, 3, 3, -4, -3, 0, -3],
    "mod": [-1, 1, -1, 1, -2, 0, 1],  # the dividend's sign (C's %, ONNX Mod fmod=1)
    "floor_mod": [1, 1, -1, -1, 1, 0, -3],  # the divisor's sign (ONNX Mod fmod=0)
}


@pytest.mark.parametrize("name", sorted(_INTEGER_RULES))
def test_integer_rounding_in_the_table_and_the_compiled_operator(name):
    expected = np.array(_INTEGER_RULES[name], "int32")
    np.testing.assert_array_equal(evaluate(name, _A, _B), expected)
    types = (TensorType((7,), "int32"), TensorType((7,), "int32"))
    inputs, outputs = lower(name, types, {})
    check_operator(inputs, outputs, lambda a, b: expected, values=[_A, _B])


def test_float_mod_and_floor_mod_take_the_dividend_and_divisor_sign():
    a, b = np.array([-7.5, 7.5], "float32"), np.array([2.0, -2.0], "float32")
    np.testing.assert_array_equal(evaluate("mod", a, b), [-1.5, 1.5])
    np.testing.assert_array_equal(evaluate("floor_mod", a, b), [0.5, -0.5])
