"""check_same_results: passes on equivalent programs, names the parameter when they differ."""

import numpy as np
import pytest

from tessel.script import tir as T
from tessel.testing import check_same_results, random_arguments


@T.prim_func
def scale_rows(A: T.Buffer((8, 6), "float32"), B: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def scale_rows_split(A: T.Buffer((8, 6), "float32"), B: T.Buffer((8, 6), "float32")):
    for io, ii, j in T.grid(2, 4, 6):
        with T.block("B"):
            vi = T.axis.spatial(8, io * 4 + ii)
            vj = T.axis.spatial(6, j)
            B[vi, vj] = A[vi, vj] + A[vi, vj]


@T.prim_func
def scale_rows_wrong(A: T.Buffer((8, 6), "float32"), B: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 5):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def symbolic_copy(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi]


def test_equivalent_programs_agree_in_interpreter_and_c():
    check_same_results(scale_rows, scale_rows_split)


def test_a_program_that_skips_a_column_is_caught_and_the_parameter_named():
    with pytest.raises(AssertionError, match="parameter `B` differs"):
        check_same_results(scale_rows, scale_rows_wrong, backends=("interpreter",))


def test_symbolic_shapes_need_sizes_and_run_with_them():
    with pytest.raises(ValueError, match="shape_vars"):
        check_same_results(symbolic_copy, symbolic_copy)
    check_same_results(symbolic_copy, symbolic_copy, shape_vars={"n": 13})


def test_random_arguments_are_deterministic_per_seed_and_match_parameter_dtypes():
    first = random_arguments(scale_rows, np.random.default_rng(3))
    second = random_arguments(scale_rows, np.random.default_rng(3))
    assert [a.dtype for a in first] == [np.float32, np.float32]
    assert all(np.array_equal(x, y) for x, y in zip(first, second, strict=True))
