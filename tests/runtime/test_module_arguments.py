"""Loaded modules check every argument before calling C, and report C failures."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tessel.runtime import FunctionSignature, Module, ParamSpec, RuntimeCallError, compile_source
from tessel.support.errors import UserError

# What generated code looks like: data pointers, scalars, trailing int64 sizes, int32 status.
SOURCE = r"""
#include <stdint.h>
static const char* message = "";
const char* tessel_get_last_error(void) { return message; }
int32_t scaled_add(const float* A, float* B, int32_t k, int64_t n) {
  if (k < 0) { message = "k must not be negative"; return -1; }
  for (int64_t i = 0; i < n * 3; ++i) B[i] += (float)k * A[i];
  return 0;
}
"""
SIGNATURE = FunctionSignature(
    "scaled_add",
    "scaled_add",
    (
        ParamSpec("A", "buffer", "float32", ("n", 3)),
        ParamSpec("B", "buffer", "float32", ("n", 3)),
        ParamSpec("k", "scalar", "int32"),
    ),
    ("n",),
)


@pytest.fixture(scope="module")
def scaled_add():
    return Module(compile_source(SOURCE), [SIGNATURE])


def test_call_writes_in_place_with_symbolic_size_bound_from_shape(scaled_add):
    a, b = np.arange(12, dtype="float32").reshape(4, 3), np.ones((4, 3), "float32")
    scaled_add(a, b, 2)
    np.testing.assert_array_equal(b, 1 + 2 * a)
    scaled_add["scaled_add"](a[:1].copy(), b[:1], 1)  # another n
    assert b[0, 1] == 1 + 2 * 1 + 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.zeros((4, 3), "float32"),), r"`scaled_add` takes 3 arguments \(A, B, k\), got 1"),
        (
            (np.zeros(12, "float32"), np.zeros((4, 3), "float32"), 1),
            r"argument `A`: expected a 2-dimensional array",
        ),
        (
            (np.zeros((4, 3), "float64"), np.zeros((4, 3), "float32"), 1),
            r"argument `A`: expected dtype float32, got float64",
        ),
        (
            (np.zeros((4, 4), "float32"), np.zeros((4, 4), "float32"), 1),
            r"argument `A`: expected shape \(4, 3\), got \(4, 4\)",
        ),
        (
            (np.zeros((4, 3), "float32"), np.zeros((5, 3), "float32"), 1),
            r"argument `B`: expected shape \(4, 3\), got \(5, 3\) \(bound earlier: n = 4\)",
        ),
        (
            (np.zeros((3, 4), "float32").T, np.zeros((4, 3), "float32"), 1),
            r"argument `A`: expected a C-contiguous array",
        ),
        (
            ([[0.0] * 3] * 4, np.zeros((4, 3), "float32"), 1),
            r"argument `A`: expected a NumPy array",
        ),
        (
            (np.zeros((4, 3), "float32"), np.zeros((4, 3), "float32"), 2**40),
            r"argument `k`: 1099511627776 does not fit in int32",
        ),
        (
            (np.zeros((4, 3), "float32"), np.zeros((4, 3), "float32"), 1.5),
            r"argument `k`: expected an int32 integer",
        ),
    ],
    ids=[
        "arity",
        "rank",
        "dtype",
        "shape",
        "symbolic-shape",
        "non-contiguous",
        "not-an-array",
        "scalar-range",
        "scalar-type",
    ],
)
def test_bad_arguments_raise_value_error_naming_the_parameter(scaled_add, args, message):
    with pytest.raises(ValueError, match=message):
        scaled_add(*args)


def test_nonzero_status_raises_runtime_call_error_with_the_c_message(scaled_add):
    a, b = np.zeros((2, 3), "float32"), np.zeros((2, 3), "float32")
    with pytest.raises(
        RuntimeCallError, match="`scaled_add` failed: k must not be negative"
    ) as err:
        scaled_add(a, b, -1)
    assert isinstance(err.value, UserError) and isinstance(err.value, RuntimeError)
    assert err.value.function == "scaled_add" and err.value.c_message == "k must not be negative"
    assert err.value.rule == "runtime.call-failed"


class _DLPackOnly:
    """An array-like that is not a NumPy array but exports DLPack (as torch tensors do)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_objects_are_accepted_without_copying(scaled_add):
    a, b = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
    scaled_add(_DLPackOnly(a), _DLPackOnly(b), 3)
    np.testing.assert_array_equal(b, 3 * a)


def test_unknown_function_name_lists_the_available_ones(scaled_add):
    with pytest.raises(KeyError, match=r"no function `nope`.*\['scaled_add'\]"):
        scaled_add["nope"]


def test_float_scalar_without_a_size_symbol_passes_nan_and_inf_through():
    source = r"""
#include <stdint.h>
const char* tessel_get_last_error(void) { return ""; }
int32_t fill(double x, double* out) { out[0] = x; return 0; }
"""
    signature = FunctionSignature(
        "fill",
        "fill",
        (ParamSpec("x", "scalar", "float64"), ParamSpec("out", "buffer", "float64", (1,))),
    )
    fill = Module(compile_source(source), [signature])
    for value in (math.nan, math.inf, -math.inf, 2.5):
        out = np.zeros(1)
        fill(value, out)
        np.testing.assert_array_equal(out, [value])


_A, _B, _K = SIGNATURE.params
RESTRICT_SIGNATURE = replace(
    SIGNATURE, params=(replace(_A, restrict=True), replace(_B, written=True, restrict=True), _K)
)


@pytest.fixture(scope="module")
def restricted_add():
    return Module(compile_source(SOURCE), [RESTRICT_SIGNATURE])


def test_bound_function_takes_the_free_arguments_and_gives_the_unbound_result(restricted_add):
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b1, b2 = np.ones((4, 3), "float32"), np.ones((4, 3), "float32")
    restricted_add["scaled_add"](a, b1, 3)
    bound = restricted_add["scaled_add"].bind({0: a, 2: 3})
    bound(b2)
    np.testing.assert_array_equal(b1, b2)
    assert "scaled_add(B), others bound" in repr(bound)


def test_bound_arguments_are_checked_when_bound(restricted_add):
    with pytest.raises(ValueError, match=r"argument `A`: expected dtype float32, got float64"):
        restricted_add["scaled_add"].bind({0: np.zeros((4, 3), "float64")})
    with pytest.raises(ValueError, match=r"has no parameter at position 5"):
        restricted_add["scaled_add"].bind({5: 1})


def test_bound_function_checks_free_arguments_against_bound_sizes_and_count(restricted_add):
    bound = restricted_add["scaled_add"].bind({0: np.zeros((4, 3), "float32")})
    with pytest.raises(ValueError, match=r"argument `B`: expected shape \(4, 3\), got \(5, 3\)"):
        bound(np.zeros((5, 3), "float32"), 1)
    with pytest.raises(ValueError, match=r"`scaled_add` takes 2 arguments \(B, k\), got 1"):
        bound(np.zeros((4, 3), "float32"))


def test_bound_function_refuses_a_free_argument_overlapping_a_bound_one(restricted_add):
    a = np.zeros((4, 3), "float32")
    bound = restricted_add["scaled_add"].bind({0: a})
    with pytest.raises(ValueError, match=r"arguments `B` and `A` of `scaled_add` overlap"):
        bound(a, 1)
