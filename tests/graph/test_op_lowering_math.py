"""The operators of tessel/graph/op/math.py: NumPy reference against the TOPI lowering (in the
TensorIR interpreter and as compiled C), the relation's types, and the bad calls' errors.
(Once graph_op_cases.CASES includes math_cases(), test_op_lowering.py and test_op_types.py run
the first two for these operators too, and only the compiled reinterpret test is needed here.)"""

import numpy as np
import pytest
from graph_lowering import flatten, lower
from graph_op_cases import random_value
from graph_op_cases_math import math_cases

from tessel.graph import TensorType
from tessel.graph.op import OpTypeError, get_op
from tessel.graph.type_util import type_equal
from tessel.testing.topi import check_operator

MATH_CASES = math_cases()


@pytest.mark.parametrize("shapes", ["first", "alt"])
@pytest.mark.parametrize("case", MATH_CASES, ids=lambda c: c.id)
def test_reference_matches_topi(case, shapes):
    types, attrs = (case.args, case.attrs) if shapes == "first" else case.alt
    op = get_op(case.op)
    rng = np.random.default_rng(3)
    values = case.values(rng, types) if case.values else [random_value(t, rng) for t in types]
    inputs, outputs = lower(case.op, types, attrs)
    check_operator(
        inputs,
        outputs,
        lambda *flat: op.evaluate(list(flat), attrs),
        values=[np.asarray(v) for v in flatten(values)],
        rtol=case.tolerance,
        atol=case.tolerance,
    )


@pytest.mark.parametrize("case", MATH_CASES, ids=lambda c: c.id)
def test_relation(case):
    op = get_op(case.op)
    assert type_equal(op.infer_type(case.args, case.attrs), case.expected)
    types, attrs, name = case.bad
    with pytest.raises(OpTypeError) as info:
        op.infer_type(types, attrs)
    assert f"`{name}`" in info.value.message


@pytest.mark.parametrize(("source", "target"), [("float32", "int32"), ("uint64", "float64")])
def test_reinterpret_between_floats_and_integers_compiled(source, target):
    """The bits, NaN payloads and signed zeros included (the interpreter has no such helper)."""
    rng = np.random.default_rng(0)
    if source.startswith("float"):
        data = rng.standard_normal(12).astype(source)
        data[:3] = [np.nan, -0.0, np.inf]
    else:
        data = rng.integers(0, 2**63, 12, dtype=source)
    inputs, outputs = lower("reinterpret", (TensorType((12,), source),), {"dtype": target})
    check_operator(
        inputs, outputs, lambda x: x.view(target), values=[data], backends=("c",), rtol=0, atol=0
    )
