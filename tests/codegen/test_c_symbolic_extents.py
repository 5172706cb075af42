"""Kernel parameters whose extents are expressions of size variables (`n * 2`, a slice's
`max(min(n, 40) - 3, 0)`), as kernels of symbolic graphs have: the array's extent comes in as
a size of its own and is checked against the expression when the kernel is called."""

import numpy as np
import pytest

from tessel import driver, te, topi
from tessel.arith.dims import symbol
from tessel.driver import generate_c_source
from tessel.ir.module import IRModule
from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.schedule.rules import default_schedule

N = symbol("n")


def _build(*tensors):
    return driver.build(IRModule.from_dict({"main": te.create_prim_func(list(tensors))}), "c")


def test_an_output_extent_of_min_and_max_runs_at_every_size():
    a = te.placeholder((N, 40), name="A")
    library = _build(a, topi.strided_slice(a, [0, 3], [N, N], None, None))
    for rows in (2, 10, 50):
        data = np.random.default_rng(rows).standard_normal((rows, 40)).astype("float32")
        out = np.zeros((rows, max(min(rows, 40) - 3, 0)), "float32")
        library["main"](data, out)
        np.testing.assert_array_equal(out, data[:, 3:rows])


def test_an_input_extent_of_a_product_takes_its_variable_from_another_parameter():
    x = te.placeholder((N * 2, 4), name="X")
    library = _build(x, topi.reshape(x, (N, 8)))
    for n in (1, 3):
        data = np.arange(n * 8, dtype="float32").reshape(n * 2, 4)
        out = np.zeros((n, 8), "float32")
        library["main"](data, out)
        np.testing.assert_array_equal(out, data.reshape(n, 8))


def test_an_array_of_the_wrong_extent_is_refused_naming_the_buffer_and_axis():
    x = te.placeholder((N * 2, 4), name="X")
    library = _build(x, topi.reshape(x, (N, 8)))
    with pytest.raises(RuntimeCallError, match=r"axis 0 of `X` must be n \* 2"):
        library["main"](np.zeros((5, 4), "float32"), np.zeros((2, 8), "float32"))


def test_an_extent_whose_variable_no_parameter_defines_is_a_build_error():
    x = te.placeholder((N * 2, 4), name="X")
    doubled = te.compute((N * 2, 4), lambda i, j: x[i, j] * 2.0, name="Y")
    with pytest.raises(BuildError, match=r"extent `n \* 2`, whose variable `n` no parameter"):
        _build(x, doubled)


def _dense_of_two_symbols(lower: int):
    b, s = symbol("b", lower, 64), symbol("s", lower, 512)
    a = te.placeholder((b * s, 64), name="A")
    w = te.placeholder((32, 64), name="W")
    func = te.create_prim_func([a, w, topi.nn.dense(a, w), b, s])
    return default_schedule(func).func


def test_a_symbol_outside_its_bounds_is_refused_at_the_kernel_entry():
    library = driver.build(IRModule.from_dict({"main": _dense_of_two_symbols(1)}), "c")
    a, w = np.ones((6, 64), "float32"), np.ones((32, 64), "float32")
    out = np.zeros((6, 32), "float32")
    library["main"](a, w, out, 2, 3)
    np.testing.assert_allclose(out, a @ w.T)
    with pytest.raises(RuntimeCallError, match=r"`s` takes sizes 1..512"):
        library["main"](np.ones((0, 64), "float32"), w, np.zeros((0, 32), "float32"), 2, 0)


def test_tile_counts_of_bounded_symbols_divide_without_checks():
    # (b * s + 7) // 8 >= 1 when b, s >= 1 (checked at entry): the tile loops divide by it
    # directly, and the accumulator tile is read and written as whole vectors.
    bounded = generate_c_source(IRModule.from_dict({"main": _dense_of_two_symbols(1)}), "c")
    assert "tessel_checked_floormod_i64(j_" not in bounded  # a call on the fused tile loop
    assert "T_dense_local[tessel_i[" not in bounded  # no gathers from the tile
    # sizes from 0: a tile count may be 0, so those divisions stay checked
    unbounded = generate_c_source(IRModule.from_dict({"main": _dense_of_two_symbols(0)}), "c")
    assert "tessel_checked_floormod_i64(j_" in unbounded
