"""Unary elementwise operators (tessel.topi.math) against NumPy, in the reference interpreter and
compiled C."""

import math

import numpy as np
import pytest

from tessel import te
from tessel.driver import build
from tessel.ir.expr import PrimExpr
from tessel.testing.topi import check_operator
from tessel.tir import interpreter
from tessel.topi import math as topi_math
from tessel.topi.utils import OperatorError

SHAPES = [(1,), (7,), (2, 13), (3, 1, 5)]

_erf = np.vectorize(math.erf)


def _positive(x):
    return np.abs(x) + np.asarray(0.1, x.dtype)


def _values(shape, dtype, seed=0, scale=1.0, domain=None):
    rng = np.random.default_rng(seed)
    x = (rng.uniform(-1.0, 1.0, size=shape) * scale).astype(dtype)
    return domain(x) if domain else x


FLOAT_OPS = [
    ("exp", np.exp, None),
    ("log", np.log, _positive),
    ("sqrt", np.sqrt, _positive),
    ("rsqrt", lambda x: 1 / np.sqrt(x), _positive),
    ("erf", _erf, None),
    ("tanh", np.tanh, None),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), None),
    ("abs", np.abs, None),
    ("negative", np.negative, None),
    ("floor", np.floor, None),
    ("ceil", np.ceil, None),
    ("trunc", np.trunc, None),
    ("sign", np.sign, None),
    ("identity", lambda x: x, None),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("name", "reference", "domain"), FLOAT_OPS, ids=[op[0] for op in FLOAT_OPS]
)
def test_float_unary(name, reference, domain, shape):
    x = te.placeholder(shape, "float32", "x")
    values = [_values(shape, "float32", scale=3.0, domain=domain)]
    check_operator([x], getattr(topi_math, name)(x), reference, values=values, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "floor", "sign"])
def test_float64(name):
    reference, domain = next((r, d) for n, r, d in FLOAT_OPS if n == name)
    x = te.placeholder((2, 7), "float64", "x")
    out = getattr(topi_math, name)(x)
    assert out.dtype == "float64"
    check_operator(
        [x], out, reference, values=[_values((2, 7), "float64", domain=domain)], rtol=1e-12
    )


def _round_half_away(x):
    # In float64 the addition is exact for float32 inputs, so halfway cases are decided exactly.
    wide = np.abs(x.astype(np.float64))
    return np.copysign(np.floor(wide + 0.5), x).astype(x.dtype)


def test_round_is_half_away_from_zero_as_tvm():
    # TVM lowers topi.round to C's round(); NumPy's np.round would give 2.0 and -2.0 for +-2.5.
    ties = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 1e8, -7.5, 3.7, -3.7, 0.0]
    x = te.placeholder((13,), "float32", "x")
    got = check_operator(
        [x], topi_math.round(x), _round_half_away, values=[np.array(ties, "float32")], rtol=0
    )
    assert list(_round_half_away(got[0])[:6]) == [-3, -2, -1, 1, 2, 3]


@pytest.mark.parametrize("shape", [(7,), (2, 13)])
def test_round_random(shape):
    x = te.placeholder(shape, "float32", "x")
    check_operator(
        [x], topi_math.round(x), _round_half_away, values=[_values(shape, "float32", scale=9.0)]
    )


INT_OPS = [
    ("abs", np.abs),
    ("negative", np.negative),
    ("sign", np.sign),
    ("identity", lambda x: x),
    ("floor", lambda x: x),
    ("ceil", lambda x: x),
    ("round", lambda x: x),
]


@pytest.mark.parametrize("dtype", ["int32", "int8"])
@pytest.mark.parametrize(("name", "reference"), INT_OPS, ids=[op[0] for op in INT_OPS])
def test_integer_unary(name, reference, dtype):
    x = te.placeholder((3, 7), dtype, "x")
    out = getattr(topi_math, name)(x)
    assert out.dtype == dtype
    check_operator([x], out, reference)


def test_sign_and_abs_of_unsigned():
    x = te.placeholder((13,), "uint8", "x")
    check_operator([x], topi_math.sign(x), np.sign)
    check_operator([x], topi_math.abs(x), np.abs)


@pytest.mark.parametrize(
    ("dtype", "a_min", "a_max"),
    [
        ("float32", -0.3, 0.4),
        ("float32", 0, 0),
        ("float64", -1, 0.25),
        ("int32", -3, 5),
        ("int8", 0, 2),
    ],
)
@pytest.mark.parametrize("shape", [(7,), (2, 1, 13)])
def test_clip(dtype, a_min, a_max, shape):
    x = te.placeholder(shape, dtype, "x")
    check_operator(
        [x], topi_math.clip(x, a_min, a_max), lambda v: np.clip(v, a_min, a_max).astype(dtype)
    )


def test_clip_with_expression_bounds():
    x = te.placeholder((7,), "float32", "x")
    out = topi_math.clip(x, te.const(-0.5, "float64"), te.const(0.5))
    check_operator([x], out, lambda v: np.clip(v, -0.5, 0.5))


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("float32", "int32"),
        ("float32", "bool"),
        ("float32", "float64"),
        ("int32", "float32"),
        ("int8", "int32"),
        ("int32", "int8"),
        ("bool", "float32"),
        ("int32", "bool"),
    ],
)
def test_cast(source, target):
    x = te.placeholder((2, 7), source, "x")
    out = topi_math.cast(x, target)
    assert out.dtype == target
    values = (
        [_values((2, 7), "float32", scale=3.0).astype(source)]
        if source.startswith("float")
        else None
    )
    check_operator([x], out, lambda v: v.astype(target), values=values)


def test_cast_of_a_scalar_is_an_expression():
    assert isinstance(topi_math.cast(3, "float32"), PrimExpr)
    assert topi_math.cast(2.75, "int32").value == 2


def test_rank0_tensor():
    # check_operator cannot take rank-0 inputs (np.ascontiguousarray makes them 1-D), so run
    # both backends directly.
    x = te.placeholder((), "float32", "x")
    func = te.create_prim_func([x, topi_math.exp(x)])
    value = np.array(0.5, "float32")
    for run in (lambda *a: interpreter.run(func, *a), build(func)):
        out = np.zeros((), "float32")
        run(value, out)
        np.testing.assert_allclose(out, np.exp(value), rtol=1e-6)


FLOAT_ONLY = ["exp", "log", "sqrt", "rsqrt", "erf", "tanh", "sigmoid"]


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_float_only_operators_reject_integers(name):
    x = te.placeholder((4,), "int32", "x")
    with pytest.raises(
        OperatorError, match=rf"{name}: argument `x`: expected a float tensor, got int32"
    ):
        getattr(topi_math, name)(x)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x, i: topi_math.exp(np.zeros(3)), r"exp: argument `x`: expected a te.Tensor"),
        (lambda x, i: topi_math.abs([1, 2]), r"abs: argument `x`: expected a te.Tensor"),
        (
            lambda x, i: topi_math.clip(x, 1.0, 0.5),
            r"clip: argument `a_min`: .* greater than a_max",
        ),
        (
            lambda x, i: topi_math.clip(i, 0.5, 3),
            r"clip: argument `a_min`: 0.5 cannot be represented in int32",
        ),
        (lambda x, i: topi_math.clip(i, 0, 2**40), r"clip: argument `a_max`"),
        (lambda x, i: topi_math.clip(x, x, 1.0), r"clip: argument `a_min`: expected a number"),
        (lambda x, i: topi_math.cast(x, "float13"), r"cast: argument `dtype`"),
        (lambda x, i: topi_math.cast("x", "int32"), r"cast: argument `x`"),
    ],
)
def test_errors(call, match):
    x, i = te.placeholder((3,), "float32", "x"), te.placeholder((3,), "int32", "i")
    with pytest.raises(OperatorError, match=match):
        call(x, i)
