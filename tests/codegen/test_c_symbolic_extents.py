"""Kernel parameters whose extents are expressions of size variables (`n * 2`, a slice's
`max(min(n, 40) - 3, 0)`), as kernels of symbolic graphs have: the array's extent comes in as
a size of its own and is checked against the expression when the kernel is called."""

import numpy as np
import pytest

from tessel import driver, te, topi
from tessel.arith.dims import symbol
from tessel.ir.module import IRModule
from tessel.runtime.errors import BuildError, RuntimeCallError

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
