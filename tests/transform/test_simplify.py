"""Simplify: expressions simplified under loop ranges, lets, branch conditions and assumptions."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir import interpreter
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Evaluate, IfThenElse
from tessel.transform import Simplify, lower
from tessel.transform.no_op import is_no_op


def _simplify(func: PrimFunc) -> PrimFunc:
    (name,) = IRModule.from_func(func).names()
    return Simplify()(IRModule.from_func(func))[name]


def _check(before: PrimFunc, expected: PrimFunc) -> PrimFunc:
    after = _simplify(before)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    return after


def test_a_condition_the_loop_range_proves_is_removed():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if i < 16:
                B[i] = A[i] + 1

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            B[i] = A[i] + 1

    check_same_results(before, _check(before, expected))


def test_a_condition_the_loop_range_refutes_keeps_the_else_branch():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if i >= 16:
                B[i] = A[i]
            else:
                B[i] = A[i] * 2

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            B[i] = A[i] * 2

    check_same_results(before, _check(before, expected))


def test_indices_are_simplified_with_the_loop_ranges():
    @T.prim_func
    def before(A: T.Buffer((16, 4), "int32"), B: T.Buffer((16,), "int32")):
        for i, j in T.grid(16, 4):
            B[(i * 4 + j) // 4] = A[(i * 4 + j) // 4, (i * 4 + j) % 4]

    @T.prim_func
    def expected(A: T.Buffer((16, 4), "int32"), B: T.Buffer((16,), "int32")):
        for i, j in T.grid(16, 4):
            B[i] = A[i, j]

    check_same_results(before, _check(before, expected))


def test_inside_a_branch_its_condition_is_known():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if i < 8:
                if i < 10:
                    B[i] = A[i]
            else:
                B[i] = T.if_then_else(i >= 8, 1, 2)

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if i < 8:
                B[i] = A[i]
            else:
                B[i] = 1

    check_same_results(before, _check(before, expected))


def _padded_consumer(assume_first: bool):
    """`B[i] = 1` where A's padding (i >= 14) is not 0: never, by the buffer constraint."""

    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if not assume_first:
                B[i] = A[i]
            T.evaluate(T.assume(i < 14 or A[i] == 0))
            if i >= 14:
                if A[i] != 0:
                    B[i] = 1
                else:
                    B[i] = 0
            else:
                B[i] = A[i]

    return before


def _run_padded(func: PrimFunc) -> list[np.ndarray]:
    a = np.arange(1, 17, dtype="int32")
    a[14:] = 0  # the caller keeps the constraint
    results = []
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        b = np.full(16, 7, "int32")
        run(a, b)
        results.append(b)
    return results


def test_a_buffer_constraint_removes_the_padding_branch():
    before = _padded_consumer(assume_first=True)

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(i < 14 or A[i] == 0))
            if 14 <= i:  # the simplifier's canonical form of `i >= 14`
                B[i] = 0
            else:
                B[i] = A[i]

    after = _check(before, expected)
    for reference, result in zip(_run_padded(before), _run_padded(after), strict=True):
        np.testing.assert_array_equal(result, reference)


def test_an_assumption_applies_only_to_the_statements_after_it():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if 14 <= i:  # canonical already: only the removal could change it
                if A[i] != 0:
                    B[i] = 1
            T.evaluate(T.assume(i < 14 or A[i] == 0))

    assert _simplify(before) is before


def test_an_assumption_stops_at_a_write_to_the_buffer_it_reads():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(i < 14 or A[i] == 0))
            A[i] = B[i]
            if 14 <= i:  # canonical already: only the removal could change it
                if A[i] != 0:
                    B[i] = 1

    assert _simplify(before) is before


def test_a_condition_reading_a_buffer_the_branch_writes_is_not_a_fact_there():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            if A[i] == 0:
                A[i] = 5
                B[i] = A[i]

    after = _simplify(before)
    assert after is before
    check_same_results(before, after)


def test_a_pure_let_is_known_inside_its_body():
    @T.prim_func
    def before(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(4):
            n = T.int32(4)
            for j in range(n):
                if i * n + j < 16:
                    B[i * 4 + j] = A[i * 4 + j]

    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(4):
            n = T.int32(4)
            for j in range(4):
                B[i * 4 + j] = A[i * 4 + j]

    check_same_results(before, _check(before, expected))


@pytest.mark.parametrize("n", [16])
def test_a_function_with_nothing_to_simplify_comes_back_as_the_same_object(n):
    @T.prim_func
    def simple(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        for i in range(n):
            if A[i] > T.float32(0):
                B[i] = A[i] * T.float32(2)
            T.evaluate(T.assume(i < n))

    mod = IRModule.from_func(simple)
    assert Simplify()(mod) is mod


@T.prim_func
def _constraint_then_consumer(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in range(16):
        T.evaluate(T.assume(i < 14 or A[i] == 0))
    for j in range(16):
        if 14 <= j:
            if A[j] != 0:
                B[j] = 1
            else:
                B[j] = 0
        else:
            B[j] = A[j]


def test_a_lowered_buffer_constraint_loop_holds_in_a_later_loop_over_its_range():
    @T.prim_func
    def expected(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(i < 14 or A[i] == 0))
        for j in range(16):
            if 14 <= j:
                B[j] = 0
            else:
                B[j] = A[j]

    after = _check(_constraint_then_consumer, expected)
    for reference, result in zip(
        _run_padded(_constraint_then_consumer), _run_padded(after), strict=True
    ):
        np.testing.assert_array_equal(result, reference)


def test_a_buffer_constraint_loop_says_nothing_outside_its_range_or_after_a_write():
    @T.prim_func
    def outside(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(8):
            T.evaluate(T.assume(i < 6 or A[i] == 0))
        for j in range(16):
            if 14 <= j:
                if A[j] != 0:
                    B[j] = 1

    @T.prim_func
    def overwritten(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(i < 14 or A[i] == 0))
        A[15] = 3
        for j in range(16):
            if 14 <= j:
                if A[j] != 0:
                    B[j] = 1

    assert _simplify(outside) is outside
    assert _simplify(overwritten) is overwritten


def test_the_pipeline_uses_buffer_constraints_before_removing_them():
    lowered = lower(_constraint_then_consumer, verify=True)["_constraint_then_consumer"]
    nodes = list(post_order(lowered.body))
    assert len([n for n in nodes if isinstance(n, IfThenElse)]) == 1  # only the padding test
    assert all(is_no_op(n) for n in nodes if isinstance(n, Evaluate))  # the assumptions are gone
    for reference, result in zip(
        _run_padded(_constraint_then_consumer), _run_padded(lowered), strict=True
    ):
        np.testing.assert_array_equal(result, reference)


def test_a_buffer_constraint_loop_leaves_no_empty_loop_after_lowering():
    @T.prim_func
    def constrained(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
        for i in range(16):
            T.evaluate(T.assume(i < 14 or A[i] == 0))
        for i in range(16):
            B[i] = A[i] + 1

    lowered = lower(constrained)["constrained"]
    assert [type(n).__name__ for n in post_order(lowered.body)].count("For") == 1


def test_a_constraint_is_instantiated_at_each_load_whatever_the_loop_shape():
    @T.prim_func
    def before(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 127), "float32")):
        for i, k in T.grid(128, 128):
            T.evaluate(T.assume(not (i >= 127 or k >= 127) or A[i, k] == T.float32(0)))
        for y, x in T.grid(128, 127):
            B[y, x] = T.if_then_else(x >= 127 or y >= 127, T.float32(0), A[x, y]) + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 127), "float32")):
        for i, k in T.grid(128, 128):
            T.evaluate(T.assume(not (i >= 127 or k >= 127) or A[i, k] == T.float32(0)))
        for y, x in T.grid(128, 127):
            B[y, x] = A[x, y] + T.float32(1)

    after = _check(before, expected)
    a = np.random.default_rng(0).standard_normal((128, 128)).astype("float32")
    a[127, :] = 0
    a[:, 127] = 0
    for func in (before, after):
        b = np.zeros((128, 127), "float32")
        interpreter.run(func, a, b)
        np.testing.assert_array_equal(b, a.T[:, :127] + 1)


def test_a_constraint_does_not_speak_about_loads_it_does_not_cover():
    @T.prim_func
    def partial(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
        for i, k in T.grid(128, 128):
            T.evaluate(T.assume(not (i >= 127) or A[i, k] == T.float32(0)))
        for x in range(128):
            B[x] = T.if_then_else(x >= 127, T.float32(0), A[0, x])

    assert "if_then_else" in _simplify(partial).script()


def test_known_contents_of_a_padding_producer_remove_a_later_branch():
    @T.prim_func
    def before(
        Q: T.Buffer((16,), "int32"), P: T.Buffer((16,), "int32"), R: T.Buffer((16,), "int32")
    ):
        for i in range(16):
            P[i] = T.if_then_else(i >= 14, 0, Q[i])
        for j in range(16):
            R[j] = T.if_then_else(j >= 14, 0, P[j])

    @T.prim_func
    def expected(
        Q: T.Buffer((16,), "int32"), P: T.Buffer((16,), "int32"), R: T.Buffer((16,), "int32")
    ):
        for i in range(16):
            P[i] = T.if_then_else(14 <= i, 0, Q[i])
        for j in range(16):
            R[j] = P[j]

    after = _check(before, expected)
    check_same_results(before, after)


def test_known_contents_end_at_the_next_write_to_the_buffer():
    @T.prim_func
    def rewritten(
        Q: T.Buffer((16,), "int32"), P: T.Buffer((16,), "int32"), R: T.Buffer((16,), "int32")
    ):
        for i in range(16):
            P[i] = T.if_then_else(i >= 14, 0, Q[i])
        P[15] = 7
        for j in range(16):
            R[j] = T.if_then_else(j >= 14, 0, P[j])

    after = _simplify(rewritten)
    assert after.script().count("if_then_else") == 2
    check_same_results(rewritten, after)


# The functions below zero their input's padding before stating the constraint, so that
# check_same_results can run them on random inputs (the interpreter checks every T.assume).


@T.prim_func
def _padded_then_nested(A: T.Buffer((16, 16), "float32"), B: T.Buffer((15, 16), "float32")):
    for i, k in T.grid(16, 16):
        if 15 <= i or 15 <= k:
            A[i, k] = T.float32(0)
    for i, k in T.grid(16, 16):
        T.evaluate(T.assume(not (i >= 15 or k >= 15) or A[i, k] == T.float32(0)))
    for x in range(15):
        for y in range(16):
            B[x, y] = T.if_then_else(x >= 15 or y >= 15, T.float32(0), A[x, y]) + T.float32(1)


def test_a_constraint_removes_a_padding_branch_in_a_differently_shaped_nest():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((15, 16), "float32")):
        for i, k in T.grid(16, 16):
            if 15 <= i or 15 <= k:
                A[i, k] = T.float32(0)
        for i, k in T.grid(16, 16):
            T.evaluate(T.assume(not (i >= 15 or k >= 15) or A[i, k] == T.float32(0)))
        for x, y in T.grid(15, 16):
            B[x, y] = A[x, y] + T.float32(1)

    before = _padded_then_nested
    check_same_results(before, _check(before, expected))


@pytest.mark.parametrize(
    ("x_extent", "y_extent", "x_padding", "removed"),
    [
        (16, 15, 15, True),  # `y >= 15` is out of range, and `x >= 15` is padding
        (16, 16, 14, False),  # x == 14 is data, not padding: the branch is needed
    ],
)
def test_a_branch_goes_only_where_every_half_of_its_condition_is_padding(
    x_extent, y_extent, x_padding, removed
):
    @T.prim_func
    def before(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
        for i, k in T.grid(16, 16):
            if 15 <= i or 15 <= k:
                A[i, k] = T.float32(0)
        for i, k in T.grid(16, 16):
            T.evaluate(T.assume(not (i >= 15 or k >= 15) or A[i, k] == T.float32(0)))
        for x, y in T.grid(x_extent, y_extent):
            B[x, y] = T.if_then_else(x >= x_padding or y >= 15, T.float32(0), A[x, y])

    after = _simplify(before)
    assert ("if_then_else" not in after.script()) == removed
    check_same_results(before, after)


def test_a_block_level_constraint_removes_the_branch_in_the_pipeline():
    @T.prim_func
    def before(A: T.Buffer((16, 16), "float32"), B: T.Buffer((15, 16), "float32")):
        for i, k in T.grid(16, 16):
            with T.block("A_pad"):
                vi, vk = T.axis.remap("SS", [i, k])
                T.reads()
                T.writes(A[vi, vk])
                if vi >= 15 or vk >= 15:
                    A[vi, vk] = T.float32(0)
        for i, k in T.grid(16, 16):
            with T.block("A_assumption"):
                vi, vk = T.axis.remap("SS", [i, k])
                T.reads(A[vi, vk])
                T.writes()
                T.evaluate(T.assume(not (vi >= 15 or vk >= 15) or A[vi, vk] == T.float32(0)))
        for x, y in T.grid(15, 16):
            with T.block("B"):
                vx, vy = T.axis.remap("SS", [x, y])
                B[vx, vy] = T.if_then_else(vx >= 15 or vy >= 15, T.float32(0), A[vx, vy])

    lowered = lower(before, verify=True)["before"]
    assert "if_then_else" not in lowered.script()
    check_same_results(before, lowered)


def test_known_pure_contents_decide_a_later_comparison():
    @T.prim_func
    def before(P: T.Buffer((16,), "int32"), R: T.Buffer((16,), "int32")):
        for i in range(16):
            P[i] = i * 2
        for j in range(8):
            R[j] = T.if_then_else(P[j] == j * 2, 1, 0)

    @T.prim_func
    def expected(P: T.Buffer((16,), "int32"), R: T.Buffer((16,), "int32")):
        for i in range(16):
            P[i] = i * 2
        for j in range(8):
            R[j] = 1

    check_same_results(before, _check(before, expected))
