"""A bound function whose arguments are arrays (of static or symbolic shape) and integer
scalars is checked and called in C (tessel.runtime.fastcall); anything the C checks do not
accept takes the Python path, which gives the same errors as before."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.runtime import (
    FunctionSignature,
    Module,
    ParamSpec,
    RuntimeCallError,
    compile_source,
    fastcall,
)
from tessel.runtime.module import _NOT_BUILT

SOURCE = r"""
#include <stdint.h>
static const char* message = "";
const char* tessel_get_last_error(void) { return message; }
int32_t scale(const float* W, const float* X, float* Y) {
  if (X[0] < 0) { message = "X[0] must not be negative"; return -1; }
  for (int i = 0; i < 12; ++i) Y[i] = W[i] * X[i];
  return 0;
}
int32_t scale_n(const float* W, const float* X, float* Y, int64_t n) {
  for (int64_t i = 0; i < n * 3; ++i) Y[i] = W[i] * X[i];
  return 0;
}
int32_t shift_n(const float* X, float* Y, int32_t k, int64_t n) {
  for (int64_t i = 0; i < n * 3; ++i) Y[i] = X[i] + (float)k;
  return 0;
}
"""

SHIFT = FunctionSignature(
    "shift_n",
    "shift_n",
    (
        ParamSpec("X", "buffer", "float32", ("n", 3)),
        ParamSpec("Y", "buffer", "float32", ("n", 3), written=True),
        ParamSpec("k", "scalar", "int32"),
    ),
    ("n",),
)


def _signature(name: str, rows: int | str, restrict: bool) -> FunctionSignature:
    shape = (rows, 3)
    return FunctionSignature(
        name,
        name,
        (
            ParamSpec("W", "buffer", "float32", shape, restrict=restrict),
            ParamSpec("X", "buffer", "float32", shape, restrict=restrict),
            ParamSpec("Y", "buffer", "float32", shape, written=True, restrict=restrict),
        ),
        ("n",) if isinstance(rows, str) else (),
    )


@pytest.fixture(scope="module")
def module():
    return Module(
        compile_source(SOURCE),
        [_signature("scale", 4, True), _signature("scale_n", "n", True), SHIFT],
    )


@pytest.fixture
def weights():
    return np.random.default_rng(0).standard_normal((4, 3)).astype("float32")


def test_static_shapes_are_called_in_c_with_the_same_results(module, weights):
    bound = module["scale"].bind({0: weights})
    x = np.abs(np.random.default_rng(1).standard_normal((4, 3))).astype("float32")
    y = np.empty((4, 3), "float32")
    bound(x, y)
    assert bound._fast not in (None, _NOT_BUILT)
    np.testing.assert_array_equal(y, weights * x)


def test_binding_builds_no_c_caller_until_the_first_call(module, weights):
    """A compile binds its weights but may never call (an export): the C caller, and with it
    the fastcall extension, is made at the first call."""
    bound = module["scale"].bind({0: weights})
    assert bound._fast is _NOT_BUILT
    y = np.empty((4, 3), "float32")
    bound(np.ones((4, 3), "float32"), y)
    assert bound._fast is not _NOT_BUILT
    np.testing.assert_array_equal(y, weights)


def test_a_symbolic_shape_is_called_in_c_with_its_size_read_from_the_arrays(module):
    function = module["scale_n"]
    rng = np.random.default_rng(2)
    for rows in (1, 5, 0):
        w, x = (rng.standard_normal((rows, 3)).astype("float32") for _ in range(2))
        y = np.full((rows, 3), np.nan, "float32")
        function(w, x, y)
        assert function._fast not in (None, _NOT_BUILT)
        np.testing.assert_array_equal(y, w * x)


def test_a_symbol_of_two_sizes_falls_back_to_the_python_paths_error(module, weights):
    with pytest.raises(ValueError, match=r"argument `X`: expected shape \(4, 3\), got \(5, 3\)"):
        module["scale_n"](weights, np.zeros((5, 3), "float32"), np.zeros((4, 3), "float32"))
    bound = module["scale_n"].bind({0: weights})  # n = 4, bound by the weights
    y = np.empty((4, 3), "float32")
    bound(np.ones((4, 3), "float32"), y)
    assert bound._fast not in (None, _NOT_BUILT)
    np.testing.assert_array_equal(y, weights)
    with pytest.raises(ValueError, match=r"argument `X`: expected shape \(4, 3\)"):
        bound(np.ones((5, 3), "float32"), np.empty((5, 3), "float32"))


def test_an_integer_scalar_is_passed_by_c_and_one_out_of_range_is_refused(module):
    function = module["shift_n"]
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = np.empty_like(x)
    function(x, y, 7)
    assert function._fast not in (None, _NOT_BUILT)
    np.testing.assert_array_equal(y, x + 7)
    function(x, y, np.int64(-2))
    np.testing.assert_array_equal(y, x - 2)
    with pytest.raises(ValueError, match=r"argument `k`: 2147483648 does not fit in int32"):
        function(x, y, 2**31)
    with pytest.raises(ValueError, match=r"argument `k`: expected an int32 integer, got True"):
        function(x, y, True)


def test_a_bound_scalar_keeps_the_python_path(module):
    bound = module["shift_n"].bind({2: 3})
    x = np.ones((2, 3), "float32")
    y = np.empty_like(x)
    bound(x, y)
    assert bound._fast is None
    np.testing.assert_array_equal(y, x + 3)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.zeros((4, 4), "float32"), np.zeros((4, 3), "float32"), r"argument `X`: expected shape"),
        (
            np.zeros((4, 3), "float64"),
            np.zeros((4, 3), "float32"),
            r"argument `X`: expected dtype float32",
        ),
        (
            np.zeros((3, 4), "float32").T,
            np.zeros((4, 3), "float32"),
            r"argument `X`: expected a C-contiguous",
        ),
        (
            np.zeros(12, "float32"),
            np.zeros((4, 3), "float32"),
            r"argument `X`: expected a 2-dimensional",
        ),
        ([[0.0] * 3] * 4, np.zeros((4, 3), "float32"), r"argument `X`: expected a NumPy array"),
    ],
)
def test_arguments_the_c_checks_refuse_get_the_python_paths_errors(module, weights, x, y, message):
    bound = module["scale"].bind({0: weights})
    with pytest.raises(ValueError, match=message):
        bound(x, y)


def test_a_read_only_output_is_refused_not_written(module, weights):
    bound = module["scale"].bind({0: weights})
    y = np.zeros((4, 3), "float32")
    y.flags.writeable = False
    with pytest.raises(ValueError, match=r"argument `Y`: the function writes this parameter"):
        bound(np.ones((4, 3), "float32"), y)
    assert not y.any()


def test_overlaps_with_a_bound_or_another_free_array_are_refused(module, weights):
    bound = module["scale"].bind({0: weights})
    with pytest.raises(ValueError, match=r"arguments `Y` and `W` of `scale` overlap"):
        bound(np.ones((4, 3), "float32"), weights)
    x = np.ones((4, 3), "float32")
    with pytest.raises(ValueError, match=r"arguments `X` and `Y` of `scale` overlap"):
        bound(x, x)


def test_a_failing_call_raises_the_functions_message(module, weights):
    bound = module["scale"].bind({0: weights})
    with pytest.raises(RuntimeCallError, match="X\\[0\\] must not be negative"):
        bound(-np.ones((4, 3), "float32"), np.empty((4, 3), "float32"))


def test_without_the_extension_calls_take_the_python_path(module, weights, monkeypatch):
    monkeypatch.setattr(fastcall, "_extension", lambda: None)
    bound = module["scale"].bind({0: weights})
    x, y = np.ones((4, 3), "float32"), np.empty((4, 3), "float32")
    bound(x, y)
    assert bound._fast is None
    np.testing.assert_array_equal(y, weights)


def test_calls_from_several_threads_at_once_keep_their_own_arguments(module, weights):
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    bound = module["scale"].bind({0: weights})

    def run(seed: int) -> bool:
        x = np.full((4, 3), float(seed), "float32")
        for _ in range(200):
            y = np.empty((4, 3), "float32")
            bound(x, y)
            if not np.array_equal(y, weights * x):
                return False
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, range(1, 9)))


def test_an_unbound_call_is_checked_and_called_in_c_too(module, weights):
    scale = module["scale"]
    x = np.abs(np.random.default_rng(2).standard_normal((4, 3))).astype("float32")
    y = np.empty((4, 3), "float32")
    scale(weights, x, y)
    assert scale._fast is not None  # made at the first call, for every later one
    np.testing.assert_array_equal(y, weights * x)


def test_an_unbound_calls_refused_arguments_get_the_python_paths_errors(module, weights):
    scale, y = module["scale"], np.zeros((4, 3), "float32")
    with pytest.raises(ValueError, match=r"argument `X`: expected shape"):
        scale(weights, np.zeros((4, 4), "float32"), y)
    with pytest.raises(ValueError, match=r"arguments `W` and `Y` of `scale` overlap"):
        scale(weights, np.ones((4, 3), "float32"), weights)
    with pytest.raises(ValueError, match=r"`scale` takes 3 arguments \(W, X, Y\), got 2"):
        scale(weights, y)
    with pytest.raises(RuntimeCallError, match="X\\[0\\] must not be negative"):
        scale(weights, -np.ones((4, 3), "float32"), y)


def test_call_once_checks_in_python_and_builds_no_c_caller(weights):
    """`call_once` (LayoutRewrite's one packing call of a weight) gives the call's result and
    errors, checked in Python, and leaves the C caller unbuilt: the next plain call builds it."""
    x = np.abs(np.random.default_rng(1).standard_normal((4, 3))).astype("float32")
    y = np.empty((4, 3), np.float32)
    function = Module(compile_source(SOURCE), [_signature("scale", 4, True)])["scale"]
    function.call_once(weights, x, y)
    np.testing.assert_array_equal(y, weights * x)
    assert function._fast is _NOT_BUILT
    with pytest.raises(ValueError, match="X"):
        function.call_once(weights, x[:2], y)
    with pytest.raises(RuntimeCallError, match="must not be negative"):
        function.call_once(weights, -x, y)
    function(weights, x, y)
    assert function._fast is not _NOT_BUILT
