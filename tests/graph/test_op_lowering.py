"""Every operator's NumPy reference (the evaluator's) against its TOPI lowering, in the TensorIR
interpreter and as compiled C, on random inputs of two shapes."""

import numpy as np
import pytest
from graph_lowering import flatten, lower, regroup
from graph_op_cases import CASES, random_value

from tessel.graph.op import get_op
from tessel.support.dtype import DataType
from tessel.testing.topi import check_operator


def _values(case, types, seed):
    rng = np.random.default_rng(seed)
    if case.values is not None:
        return case.values(rng, types)
    return [random_value(t, rng) for t in types]


@pytest.mark.parametrize("shapes", ["first", "alt"])
@pytest.mark.parametrize("case", [c for c in CASES if c.lowers], ids=lambda c: c.id)
def test_reference_matches_topi(case, shapes):
    types, attrs = (case.args, case.attrs) if shapes == "first" else case.alt
    op = get_op(case.op)
    values = _values(case, types, seed=len(case.id))
    inputs, outputs = lower(case.op, types, attrs)

    def reference(*flat):
        result = op.evaluate(regroup(list(flat), types), attrs)
        return list(result) if isinstance(result, tuple) else result

    flat_values = [np.asarray(v) for v in flatten(values)]
    check_operator(
        inputs, outputs, reference, values=flat_values, rtol=case.tolerance, atol=case.tolerance
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_reference_result_has_the_relation_type(case):
    op = get_op(case.op)
    result = op.evaluate(_values(case, case.args, seed=1), case.attrs)
    expected = op.infer_type(case.args, case.attrs)
    results = result if isinstance(result, tuple) else (result,)
    types = expected.fields if hasattr(expected, "fields") else (expected,)
    for value, ty in zip(results, types, strict=True):
        assert value.shape == ty.shape and str(DataType.of(value.dtype)) == ty.dtype
