"""topi.full / full_like / zeros_like / ones_like against NumPy in the interpreter and C."""

import numpy as np
import pytest

from tessel import te, topi
from tessel.testing.topi import check_operator
from tessel.topi.utils import OperatorError


def test_full_like_takes_the_shape_and_dtype_of_its_input():
    x = te.placeholder((2, 3), "int32", name="x")
    out = topi.full_like(x, 7)
    assert out.dtype == "int32" and out.const_shape() == (2, 3)
    check_operator([x], out, lambda v: np.full_like(v, 7))


@pytest.mark.parametrize(
    ("name", "reference"), [("zeros_like", np.zeros_like), ("ones_like", np.ones_like)]
)
def test_zeros_and_ones_like_match_numpy(name, reference):
    x = te.placeholder((3, 2), "float32", name="x")
    out = getattr(topi, name)(x)
    assert out.dtype == "float32"
    check_operator([x], out, reference)


def test_full_builds_a_constant_tensor():
    x = te.placeholder((4,), name="x")
    out = topi.full((4,), "float32", -1.5) + x
    check_operator([x], out, lambda v: v - 1.5)


def test_fill_value_that_does_not_fit_the_dtype_is_an_operator_error():
    x = te.placeholder((2,), "int8", name="x")
    with pytest.raises(OperatorError, match="full_like: argument `fill_value`"):
        topi.full_like(x, 1000)


def test_tensor_fill_value_is_an_operator_error():
    x = te.placeholder((2,), name="x")
    with pytest.raises(OperatorError, match="expected a scalar, got Tensor"):
        topi.full_like(x, x)
