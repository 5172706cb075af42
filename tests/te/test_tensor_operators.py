"""Python operators on whole te tensors (`A + B`, `2 * A`, `-A`, `A ** 2`): broadcast computes
checked against NumPy in the interpreter and compiled C; element arithmetic stays expressions."""

import numpy as np
import pytest

from tessel import te
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.testing.topi import check_operator
from tessel.topi.utils import OperatorError


def _away_from_zero(x):
    return np.where(x < 0, x - 0.5, x + 0.5).astype(x.dtype)


def _pair():
    return te.placeholder((3, 1, 4), name="A"), te.placeholder((5, 1), name="B")


def _values(a_shape, b_shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, a_shape).astype("float32")
    return a, _away_from_zero(rng.uniform(-1, 1, b_shape).astype("float32"))


TENSOR_TENSOR = [
    ("add", lambda A, B: A + B, np.add),
    ("subtract", lambda A, B: A - B, np.subtract),
    ("multiply", lambda A, B: A * B, np.multiply),
    ("divide", lambda A, B: A / B, np.divide),
    ("floor_divide", lambda A, B: A // B, np.floor_divide),
    ("floor_mod", lambda A, B: A % B, np.mod),
]


@pytest.mark.parametrize(
    ("name", "build", "reference"), TENSOR_TENSOR, ids=[c[0] for c in TENSOR_TENSOR]
)
def test_tensor_with_tensor_broadcasts_like_numpy(name, build, reference):
    A, B = _pair()
    C = build(A, B)
    assert isinstance(C, Tensor) and C.op.name == f"T_{name}"
    check_operator([A, B], C, reference, values=_values((3, 1, 4), (5, 1)))


TENSOR_SCALAR = [
    ("tensor_plus_int", lambda A: A + 2, lambda a: a + 2),
    ("int_plus_tensor", lambda A: 2 + A, lambda a: 2 + a),
    ("tensor_minus_one", lambda A: A - 1, lambda a: a - 1),
    ("one_minus_tensor", lambda A: 1 - A, lambda a: 1 - a),
    ("tensor_times_two", lambda A: A * 2, lambda a: a * 2),
    ("two_times_tensor", lambda A: 2 * A, lambda a: 2 * a),
    ("tensor_over_float", lambda A: A / 4.0, lambda a: a / 4.0),
    ("float_over_tensor", lambda A: 1.0 / A, lambda a: 1.0 / a),
    ("negate", lambda A: -A, lambda a: -a),
    ("square", lambda A: A**2, lambda a: a**2),
    ("two_to_the_tensor", lambda A: 2.0**A, lambda a: 2.0**a),
    ("chain", lambda A: (A * 3 - 1) / 2 + A**2, lambda a: (a * 3 - 1) / 2 + a**2),
]


@pytest.mark.parametrize(
    ("name", "build", "reference"), TENSOR_SCALAR, ids=[c[0] for c in TENSOR_SCALAR]
)
def test_tensor_with_scalar_matches_numpy(name, build, reference):
    A = te.placeholder((2, 3), name="A")
    values = [_away_from_zero(np.random.default_rng(1).uniform(-1, 1, (2, 3)).astype("float32"))]
    check_operator([A], build(A), reference, values=values, rtol=1e-5)


def test_integer_tensor_operators_keep_the_dtype():
    A = te.placeholder((4,), "int32", name="A")
    B = te.placeholder((4,), "int32", name="B")
    C = -(A * 3) + B % 5 - A // 2
    assert C.dtype == "int32"
    values = [np.array([-7, -1, 0, 9], "int32"), np.array([3, -8, 11, -2], "int32")]
    check_operator([A, B], C, lambda a, b: -(a * 3) + b % 5 - a // 2, values=values)


def test_astype_casts_elementwise():
    A = te.placeholder((5,), name="A")
    C = A.astype("int32")
    assert C.dtype == "int32"
    values = [np.array([-2.5, -0.5, 0.0, 1.7, 3.2], "float32")]
    check_operator([A], C, lambda a: a.astype("int32"), values=values)


def test_element_arithmetic_stays_an_expression():
    A, B = te.placeholder((3,), name="A"), te.placeholder((3,), name="B")
    i = te.var("i")
    for expr in (A[i] + B[i], A[i] * 2, 2 - B[i], -A[i], A[i] / B[i]):
        assert isinstance(expr, PrimExpr)
    C = te.compute((3,), lambda j: A[j] * B[j] + 1.0, name="C")
    check_operator([A, B], C, lambda a, b: a * b + 1.0)


def test_tensors_stay_hashable_by_identity():
    A = te.placeholder((3,), name="A")
    B = te.placeholder((3,), name="B")
    assert len({A, B, A}) == 2 and A != B and A == A


def test_shapes_that_do_not_broadcast_are_an_operator_error():
    A, B = te.placeholder((3, 4), name="A"), te.placeholder((5,), name="B")
    with pytest.raises(
        OperatorError, match="add: argument `rhs`: shape \\[5\\] does not broadcast"
    ):
        A + B


def test_power_of_an_integer_tensor_is_an_operator_error():
    A = te.placeholder((3,), "int32", name="A")
    with pytest.raises(OperatorError, match="power: .*expected a float dtype"):
        A**2


def test_mixed_dtypes_are_an_operator_error():
    A = te.placeholder((3,), "float32", name="A")
    B = te.placeholder((3,), "int32", name="B")
    with pytest.raises(OperatorError, match="dtype int32 differs from float32"):
        A * B


def test_a_fraction_against_an_integer_tensor_is_an_operator_error():
    A = te.placeholder((3,), "int32", name="A")
    with pytest.raises(OperatorError, match="cannot be represented in int32"):
        A + 0.5


def test_operator_built_computes_are_differentiable():
    A, B = te.placeholder((2, 3), name="A"), te.placeholder((3,), name="B")
    C = (A * B + A) ** 2
    grad_a, grad_b = te.gradient(C, [A, B])
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (2, 3)).astype("float32")
    b = rng.uniform(-1, 1, (3,)).astype("float32")
    inner = a * b + a
    check_operator(
        [A, B],
        [grad_a, grad_b],
        lambda x, y: (2 * inner * (y + 1), (2 * inner * x).sum(axis=0)),
        values=[a, b],
        rtol=1e-4,
    )


def test_an_element_on_the_left_of_a_tensor_broadcasts_as_in_tvm():
    A, B = te.placeholder((3, 4), name="A"), te.placeholder((4,), name="B")
    C = A[0, 1] * 2 + B  # PrimExpr + Tensor: the tensor's reflected operator builds the compute
    assert isinstance(C, Tensor) and [int(d) for d in C.shape] == [4]
    check_operator([A, B], C, lambda a, b: a[0, 1] * 2 + b)


def test_tensor_arithmetic_before_topi_is_imported_is_a_clear_error():
    # te is below topi (docs/architecture.md §1): topi registers the operators when it loads.
    import subprocess
    import sys

    code = (
        "from tessel import te\n"
        "from tessel.support.errors import UserError\n"
        "A = te.placeholder((3,), name='A')\n"
        "try:\n    A + A\nexcept UserError as err:\n    print(err.rule)\n"
        "import tessel.topi\n"
        "print((A + A).op.name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["te.tensor-operator", "T_add"]
