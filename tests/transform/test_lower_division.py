"""LowerDivision: floordiv/floormod by a positive constant become truncating division where the
dividend is provably non-negative (loop ranges, let values), and nowhere else; results agree
(interpreter, C) and the C uses its own `/` and `%`."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.driver import build, generate_c_source
from tessel.ir.expr import FloorDiv, FloorMod
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal
from tessel.testing.differential import run_with
from tessel.tir import interpreter
from tessel.transform import lower
from tessel.transform.lower_division import LowerDivision


def _lower_division(func):
    return LowerDivision()(IRModule.from_func(func))[func.name]


def _floor_nodes(func) -> list:
    return [node for node in post_order(func.body) if isinstance(node, FloorDiv | FloorMod)]


def _function_body(source: str, name: str) -> str:
    """The C definition of the exported function `name` (the prelude left out)."""
    start = source.index(f" {name}(")
    return source[start : source.index("\n}\n", start)]


def test_division_of_a_loop_index_becomes_truncating_division():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = i // 4 * 10 + i % 4

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = T.truncdiv(i, 4) * 10 + T.truncmod(i, 4)

    after = _lower_division(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)


def test_division_of_a_loop_index_with_a_positive_offset_is_lowered():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = (i + 3) // 4 + (i * 5 + 2) % 7

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = T.truncdiv(i + 3, 4) + T.truncmod(i * 5 + 2, 7)

    after = _lower_division(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)


def test_let_bound_non_negative_value_is_lowered():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            x: T.int32 = i * 3 + 2
            A[i] = x // 4 + x % 4

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32")):
        for i in range(16):
            x: T.int32 = i * 3 + 2
            A[i] = T.truncdiv(x, 4) + T.truncmod(x, 4)

    after = _lower_division(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)


def test_let_bound_possibly_negative_value_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            x: T.int32 = i - 5
            A[i] = x // 4 + x % 4

    assert _lower_division(before) is before


def test_dividend_that_can_be_negative_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = (i - 1) // 4 + (i - 1) % 4

    assert _lower_division(before) is before


def test_variable_divisor_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), n: T.int32):
        for i in range(16):
            A[i] = i // n + i % n

    assert _lower_division(before) is before


def test_negative_constant_divisor_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32")):
        for i in range(16):
            A[i] = i // -4 + i % -4

    assert _lower_division(before) is before


def test_float_floor_division_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32")):
        for i in range(16):
            A[i] = T.Cast("float32", i) // T.float32(4)

    assert _lower_division(before) is before


def test_buffer_value_of_unknown_sign_is_kept():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            B[i] = A[i] // 4 + A[i] % 4

    assert _lower_division(before) is before


def test_only_the_provably_non_negative_operand_is_lowered_in_a_mixed_expression():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            B[i] = A[i] // 4 + i // 4

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            B[i] = A[i] // 4 + T.truncdiv(i, 4)

    after = _lower_division(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)


@T.prim_func
def _mixed_divisions(
    A: T.Buffer((8, 16), "int32"), B: T.Buffer((8, 16), "int32"), C: T.Buffer((8, 16), "int32")
):
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = (vi * 16 + vj) // 6 * 1000 + (vi * 16 + vj) % 6 * 10 + vj // 3
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = (A[vi, vj] - vj) // 4 * 100 + (A[vi, vj] + vi) % 5 + (vj - 8) // 3


def test_divisions_of_indices_and_of_signed_values_agree_with_the_interpreter_in_c():
    rng = np.random.default_rng(7)
    a = rng.integers(-1000, 1000, size=(8, 16), dtype="int32")
    a[0, :4] = [-1, -4, -5, 0]  # exact multiples and their neighbours around zero
    args = [a, np.zeros((8, 16), "int32"), np.zeros((8, 16), "int32")]
    reference = run_with("interpreter", _mixed_divisions, args)
    compiled = run_with("c", _mixed_divisions, args)
    for want, got in zip(reference, compiled, strict=True):
        np.testing.assert_array_equal(got, want)
    lowered = lower(_mixed_divisions)[_mixed_divisions.name]
    np.testing.assert_array_equal(run_with("interpreter", lowered, args)[2], reference[2])


def test_lowered_division_is_c_division_and_the_rest_keeps_the_floor_helper():
    body = _function_body(generate_c_source(_mixed_divisions), _mixed_divisions.name)
    b_store, c_store = (line for line in body.splitlines() if "] = " in line)
    assert " / 6)" in b_store
    assert " % 6)" in b_store
    assert "tessel_floordiv_i32" not in b_store
    assert "tessel_floormod_i32" not in b_store
    assert "tessel_floordiv_i32" in c_store  # A[i, j] - j may be negative
    assert "tessel_floormod_i32" in c_store


def _divide_over_range(lo: int, extent: int, divisor: int):
    """`i // divisor` and `i % divisor` for lo <= i < lo + extent."""

    @T.prim_func
    def divide(Q: T.Buffer((extent,), "int32"), R: T.Buffer((extent,), "int32")):
        for i in T.serial(lo, lo + extent):
            Q[i - lo] = i // divisor
            R[i - lo] = i % divisor

    return divide


@settings(max_examples=12, deadline=None)
@given(
    lo=st.integers(min_value=0, max_value=300),
    extent=st.integers(min_value=1, max_value=40),
    divisor=st.integers(min_value=1, max_value=37),
)
def test_lowered_division_over_a_non_negative_range_computes_floor_division(lo, extent, divisor):
    func = _divide_over_range(lo, extent, divisor)
    lowered = lower(func)[func.name]
    assert not _floor_nodes(lowered)  # every division became truncating
    q, r = np.full(extent, -1, "int32"), np.full(extent, -1, "int32")
    interpreter.run(func, q, r)
    i = np.arange(lo, lo + extent)
    np.testing.assert_array_equal(q, i // divisor)
    np.testing.assert_array_equal(r, i % divisor)
    q_c, r_c = np.full(extent, -1, "int32"), np.full(extent, -1, "int32")
    build(func)(q_c, r_c)
    np.testing.assert_array_equal(q_c, q)
    np.testing.assert_array_equal(r_c, r)
