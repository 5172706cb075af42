"""The reductions' TOPI computes against their graph operators' NumPy references, in the
interpreter and compiled C: reductions over an empty axis (their identity, once uninitialised
memory) and cumprod."""

import numpy as np
import pytest

from tessel import te
from tessel.graph.op import get_op
from tessel.testing.topi import check_operator
from tessel.topi import reduction
from tessel.topi.utils import OperatorError


def _reference(name, **attrs):
    """The graph operator `name`'s reference with `attrs`, as check_operator calls it."""
    return lambda *arrays: get_op(name).evaluate(arrays, attrs)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
def test_reduction_over_an_empty_axis_is_its_identity(name, dtype):
    if dtype != "float32" and name == "mean" or dtype == "bool" and name in ("sum", "prod"):
        pytest.skip("not defined for this dtype")
    data = te.placeholder((2, 0, 3), dtype=dtype, name="data")
    out = getattr(reduction, name)(data, [1], True)
    with np.errstate(invalid="ignore"):
        check_operator(
            [data],
            [out],
            _reference(name, axis=(1,), keepdims=True),
            values=[np.zeros((2, 0, 3), dtype)],
        )


def test_argmax_over_an_empty_axis_is_refused():
    data = te.placeholder((2, 0), name="data")
    with pytest.raises(OperatorError, match="empty"):
        reduction.argmax(data, [1])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize(
    ("shape", "axis", "dtype"), [((5,), 0, "float32"), ((2, 3, 4), 1, "int32")]
)
def test_cumprod_matches_its_reference(shape, axis, dtype, exclusive):
    data = te.placeholder(shape, dtype=dtype, name="data")
    values = [np.random.default_rng(0).integers(-3, 4, shape).astype(dtype)]
    out = reduction.cumprod(data, axis, exclusive)
    check_operator(
        [data], [out], _reference("cumprod", axis=axis, exclusive=exclusive), values=values
    )


def test_cumprod_reference_keeps_zeros_exact():
    """The exclusive product is of the shifted data, not the inclusive one divided."""
    got = get_op("cumprod").evaluate(
        [np.array([2, 0, 3], np.int64)], {"axis": 0, "exclusive": True}
    )
    np.testing.assert_array_equal(got, [1, 2, 0])
