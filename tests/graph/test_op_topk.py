"""topk: the TOPI lowering against the NumPy reference (the shared checks on its Case, and
unsigned values), and the reference's order of ties (the lower index first)."""

import numpy as np
import pytest
from graph_lowering import lower
from graph_op_cases_topk import topk_cases

from tessel.graph import TensorType
from tessel.graph.op import OpTypeError, get_op
from tessel.testing.topi import check_operator


@pytest.mark.parametrize("shapes", ["first", "alt"])
@pytest.mark.parametrize("case", topk_cases(), ids=lambda c: c.id)
def test_topk_lowering_matches_reference(case, shapes):
    types, attrs = (case.args, case.attrs) if shapes == "first" else case.alt
    values = case.values(np.random.default_rng(0), types)
    inputs, outputs = lower("topk", types, attrs)
    expected = get_op("topk").infer_type(types, attrs)
    assert [o.const_shape() for o in outputs] == [f.shape for f in expected.fields]
    check_operator(
        inputs,
        outputs,
        lambda x: list(get_op("topk").evaluate([x], attrs)),
        values=values,
        backends=("c",),
    )


@pytest.mark.parametrize("case", topk_cases(), ids=lambda c: c.id)
def test_topk_bad_k_names_it(case):
    types, attrs, name = case.bad
    with pytest.raises(OpTypeError, match=f"`{name}`"):
        get_op("topk").infer_type(types, attrs)


def test_topk_of_unsigned_values():
    types, attrs = (TensorType((6,), "uint64"),), {"k": 2, "axis": 0}
    inputs, outputs = lower("topk", types, attrs)
    values = [np.array([3, 2**63 + 1, 0, 7, 2**63 + 1, 1], "uint64")]
    check_operator(
        inputs,
        outputs,
        lambda x: list(get_op("topk").evaluate([x], attrs)),
        values=values,
        backends=("c",),
    )


def test_topk_reference_breaks_ties_by_lower_index():
    values, indices = get_op("topk").evaluate([np.array([1, 3, 3, 1], "uint8")], {"k": 4})
    assert values.tolist() == [3, 3, 1, 1]
    assert indices.tolist() == [1, 2, 0, 3]
    _, indices = get_op("topk").evaluate(
        [np.array([1, 3, 3, 1], "uint8")], {"k": 2, "largest": False}
    )
    assert indices.tolist() == [0, 3]
