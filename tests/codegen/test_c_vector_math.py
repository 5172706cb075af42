"""Vector math in C: a math call's lane loop is an `omp simd` loop (gcc calls glibc's libmvec),
and vector exp clamps its argument at a normal-result floor (`tessel_exp_floor_f32` = -87,
`tessel_exp_floor_f64` = -708), so libmvec never takes its slow path, then sets the clamped
lanes to 0 (never a subnormal number, which slows whatever reads it); NaN and +inf propagate;
the scalar path is untouched."""

from __future__ import annotations

import math
import platform
import shutil
import subprocess

import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.runtime.compiler import compiler_flags, find_compiler
from tessel.script import tir as T
from tessel.testing import check_same_results

N = 64
# dtype -> (the clamp's bound, absolute tolerance below it, the prelude variable)
CLAMP = {
    "float32": (-87.0, 2e-38, "tessel_exp_floor_f32"),
    "float64": (-708.0, 1e-307, "tessel_exp_floor_f64"),
}


def _unary(op, dtype: str, *, vectorized: bool = True):
    """B[i] = op(A[i]) over N elements, the loop vectorized or serial."""
    if vectorized:

        @T.prim_func
        def vector_math(A: T.Buffer((N,), dtype), B: T.Buffer((N,), dtype)):
            for i in T.vectorized(N):
                with T.block("B"):
                    vi = T.axis.spatial(N, i)
                    B[vi] = op(A[vi])

        return vector_math

    @T.prim_func
    def scalar_math(A: T.Buffer((N,), dtype), B: T.Buffer((N,), dtype)):
        for i in T.serial(N):
            with T.block("B"):
                vi = T.axis.spatial(N, i)
                B[vi] = op(A[vi])

    return scalar_math


def _run(func, values: np.ndarray) -> np.ndarray:
    """Compiled C on `values` padded to N with zeros; the outputs for `values`."""
    a = np.zeros(N, values.dtype)
    a[: len(values)] = values
    b = np.full(N, 7, values.dtype)
    build(func)(a, b)
    return b[: len(values)]


def _function_body(func) -> str:
    """The C definition of `func` (the prelude, which declares the bounds, left out)."""
    source = generate_c_source(func)
    start = source.index(f" {func.name}(")
    return source[start : source.index("\n}\n", start)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_exp_matches_numpy_on_ordinary_inputs(dtype):
    high = 80.0 if dtype == "float32" else 700.0
    values = np.random.default_rng(0).uniform(-high, high, N).astype(dtype)
    values[:4] = [0.0, 1.0, -1.0, CLAMP[dtype][0] + 1]  # just above the clamp: not clamped
    result = _run(_unary(T.exp, dtype), values)
    np.testing.assert_allclose(result, np.exp(values), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_exp_agrees_with_the_interpreter_on_random_inputs(dtype):
    func = _unary(T.exp, dtype)
    check_same_results(func, func, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_exp_under_the_floor_is_zero_within_tolerance_of_numpy(dtype):
    floor, atol, _ = CLAMP[dtype]
    if dtype == "float32":
        below = [-1e4, -100.0, -88.0, -87.5, -3.4e38, -np.inf, floor]  # NumPy: denormals, zero
    else:
        below = [-1e4, -709.0, -745.0, -800.0, -1.7e308, -np.inf, floor]
    values = np.array(below, dtype)
    result = _run(_unary(T.exp, dtype), values)
    np.testing.assert_allclose(result, np.exp(values), rtol=0, atol=atol)
    # Zero, never a subnormal: softmax divided e**floor by its sum into subnormal
    # probabilities, and the attention matmul reading them ran 90x slower.
    np.testing.assert_array_equal(result, np.zeros(len(values), dtype))


def test_softmax_over_masked_scores_has_no_subnormal_probabilities():
    """Attention over padded tokens: scores -1e4 where masked; each row's probabilities are
    exactly 0 there, not subnormal numbers (as they were when exp stopped at e**-87)."""
    from tessel import graph

    model = graph.compile(
        graph.parse("""def @main(%x: Tensor[(4, 64), float32]) {
      nn.softmax(%x, axis=-1)
    }""")
    )
    scores = np.random.default_rng(0).standard_normal((4, 64)).astype("float32")
    scores[:, 10:] = -1e4
    probabilities = model(scores)
    assert not np.any((probabilities != 0) & (np.abs(probabilities) < np.finfo("float32").tiny))
    np.testing.assert_array_equal(probabilities[:, 10:], 0)
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_exp_propagates_nan_and_overflows_to_inf(dtype):
    overflow = 89.0 if dtype == "float32" else 710.0
    values = np.array([np.nan, np.inf, overflow, -np.nan], dtype)
    result = _run(_unary(T.exp, dtype), values)
    assert np.isnan(result[0])
    assert result[1] == np.inf
    assert result[2] == np.inf
    assert np.isnan(result[3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_exp_is_a_simd_lane_loop_clamped_at_the_prelude_floor(dtype):
    body = _function_body(_unary(T.exp, dtype))
    assert '_Pragma("omp simd")' in body
    assert CLAMP[dtype][2] in body
    # The floor is a number, so the clamp is one compare (NaN fails it and is kept), not the
    # general max's NaN test of both sides.
    assert "tessel_m = (tessel_p0 >= tessel_p1);" in body
    assert "tessel_p0 != tessel_p0" not in body


def _reference(name: str, values: np.ndarray) -> np.ndarray:
    exact = values.astype("float64")
    if name == "erf":
        return np.vectorize(math.erf)(exact)
    return {"tanh": np.tanh, "log": np.log}[name](exact)


MATH = [("erf", T.erf, -4.0, 4.0), ("tanh", T.tanh, -10.0, 10.0), ("log", T.log, 1e-3, 1e3)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "op", "low", "high"), MATH, ids=[m[0] for m in MATH])
def test_vector_math_matches_a_float64_reference(name, op, low, high, dtype):
    values = np.random.default_rng(1).uniform(low, high, N).astype(dtype)
    func = _unary(op, dtype)
    result = _run(func, values)
    np.testing.assert_allclose(result, _reference(name, values), rtol=1e-5)
    body = _function_body(func)
    assert '_Pragma("omp simd")' in body
    assert "tessel_exp_floor" not in body  # only exp is clamped


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("name", "op", "values", "expected"),
    [
        ("erf", T.erf, [np.inf, -np.inf, 0.0, np.nan], [1.0, -1.0, 0.0, np.nan]),
        ("tanh", T.tanh, [np.inf, -np.inf, 0.0, np.nan], [1.0, -1.0, 0.0, np.nan]),
        ("log", T.log, [0.0, -1.0, np.inf, 1.0, np.nan], [-np.inf, np.nan, np.inf, 0.0, np.nan]),
    ],
    ids=["erf", "tanh", "log"],
)
def test_vector_math_special_values_follow_c99(name, op, values, expected, dtype):
    result = _run(_unary(op, dtype), np.array(values, dtype))
    np.testing.assert_array_equal(result, np.array(expected, dtype))


@pytest.mark.parametrize(
    ("dtype", "value"), [("float32", -100.0), ("float64", -709.0), ("float64", -745.0)]
)
def test_scalar_exp_is_not_clamped_and_keeps_the_denormal(dtype, value):
    func = _unary(T.exp, dtype, vectorized=False)
    body = _function_body(func)
    assert "tessel_exp_floor" not in body
    assert "omp simd" not in body
    (result,) = _run(func, np.array([value], dtype))
    expected = np.exp(np.array(value, dtype))
    assert 0 < result < np.finfo(dtype).tiny  # a denormal, not e**floor
    assert result == expected


def _libmvec_available() -> bool:
    libc, version = platform.libc_ver()
    if platform.machine() != "x86_64" or libc != "glibc" or shutil.which("nm") is None:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (2, 22) and "-fopenmp" in compiler_flags(find_compiler())


@pytest.mark.skipif(not _libmvec_available(), reason="needs x86-64 glibc >= 2.22, gcc -fopenmp, nm")
@pytest.mark.parametrize(("dtype", "symbol"), [("float32", "v_expf@"), ("float64", "v_exp@")])
def test_vector_exp_calls_libmvec(dtype, symbol):
    module = build(_unary(T.exp, dtype))
    listing = subprocess.run(
        ["nm", "-D", str(module.library_path)], capture_output=True, text=True, check=True
    ).stdout
    assert any("_ZGV" in line and symbol in line for line in listing.splitlines()), listing
