"""Float results of compiled C are bit-identical to the interpreter's and NumPy's where C and
NumPy can differ: rounding of halfway cases, min/max of signed zeros and NaN."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.ir import builders as B
from tessel.testing.ir_programs import loops, prim_func, store
from tessel.tir import builtin, interpreter
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import ForKind


def _run_both(func, *inputs):
    """The output (last argument) after running `func` in the interpreter and in C."""
    results = []
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        out = np.full_like(inputs[0], 7)
        run(*inputs, out)
        results.append(out)
    return results


def _same_bits(result, expected):
    np.testing.assert_array_equal(result, expected)  # equal values, NaN where NaN
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_takes_halfway_cases_to_even_like_numpy(dtype):
    values = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 0.49999997, -3.7, np.inf, np.nan], dtype)
    a_buf, out = decl_buffer((10,), dtype, "A"), decl_buffer((10,), dtype, "out")
    body = loops((10,), lambda i: store(out, (i,), builtin.math_unary("round", a_buf[i])))
    func = prim_func("rounding", (a_buf, out), body)
    for result in _run_both(func, values):
        _same_bits(result, np.round(values))


@pytest.mark.parametrize(
    ("builder", "reference"), [(B.min_value, np.minimum), (B.max_value, np.maximum)]
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_min_max_of_signed_zeros_and_nan_follow_numpy(builder, reference, dtype):
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -np.inf, 2.0], dtype)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, 3.0, -1.0], dtype)
    a_buf, b_buf, out = (decl_buffer((7,), dtype, name) for name in ("A", "B", "out"))
    body = loops((7,), lambda i: store(out, (i,), builder(a_buf[i], b_buf[i])))
    func = prim_func("extreme", (a_buf, b_buf, out), body)
    for result in _run_both(func, a, b):
        _same_bits(result, reference(a, b))


@pytest.mark.parametrize(
    ("builder", "reference"), [(B.min_value, np.minimum), (B.max_value, np.maximum)]
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vectorized_min_max_of_signed_zeros_and_nan_follow_numpy(builder, reference, dtype):
    """The vector form (a compare and a bitwise select) keeps the scalar helpers' rule."""
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -np.inf, 2.0, 5.0] * 2, dtype)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, 3.0, -1.0, 5.0] * 2, dtype)
    a_buf, b_buf, out = (decl_buffer((16,), dtype, name) for name in ("A", "B", "out"))
    body = loops(
        (16,), lambda i: store(out, (i,), builder(a_buf[i], b_buf[i])), kind=ForKind.VECTORIZED
    )
    func = prim_func("extreme", (a_buf, b_buf, out), body)
    entry = generate_c_source(func).split("TESSEL_EXPORT int32_t")[-1]
    assert "tessel_m = (tessel_p0" in entry and "tessel_l" not in entry  # no lane loop
    for result in _run_both(func, a, b):
        _same_bits(result, reference(a, b))
