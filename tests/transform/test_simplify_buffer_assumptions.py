"""Simplify with `T.assume` facts about buffer contents (TVM's Simplify with
propagate_knowns_to_prove_conditional): a fact decides a later condition on the buffer where
the assumption's scope says it holds, until a store can change the element, and at the start of
the statement holding that store (an `if`'s condition, each iteration of a loop that writes only
its own element). Before/Expected in TVM's printed form, and each pair run on inputs that
satisfy the assumptions (the interpreter checks every `T.assume`)."""

from __future__ import annotations

import numpy as np

from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.testing.differential import BACKENDS, assert_arguments_close, run_with
from tessel.tir.function import PrimFunc
from tessel.transform import Simplify


def _simplify(func: PrimFunc) -> PrimFunc:
    (name,) = IRModule.from_func(func).names()
    return Simplify()(IRModule.from_func(func))[name]


def _check(before: PrimFunc, expected: PrimFunc, *inputs: np.ndarray) -> PrimFunc:
    """`before` simplifies to `expected`, which computes what `before` does on `inputs`."""
    after = _simplify(before)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    _same_results(before, after, *inputs)
    return after


def _same_results(before: PrimFunc, after: PrimFunc, *inputs: np.ndarray) -> None:
    reference = run_with("interpreter", before, list(inputs))
    for backend in BACKENDS:
        result = run_with(backend, after, list(inputs))
        assert_arguments_close(reference, result, after, f"{backend} vs interpreter", 0, 0)


def _zeros() -> np.ndarray:
    return np.zeros(16, dtype="int32")


def test_an_assumed_buffer_value_decides_the_if_whose_branch_overwrites_it():
    @T.prim_func
    def before(A: T.Buffer(1, "int32")):
        T.evaluate(T.assume(A[0] == 0))
        if A[0] == 0:
            A[0] = 42

    @T.prim_func
    def expected(A: T.Buffer(1, "int32")):
        T.evaluate(T.assume(A[0] == 0))
        A[0] = 42

    _check(before, expected, np.zeros(1, dtype="int32"))


def test_an_assumption_over_a_loop_holds_in_each_iteration_writing_only_its_element():
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == i))
        for i in T.serial(16):
            if A[i] < 100:
                A[i] = 0

    @T.prim_func
    def expected(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == i))
        for i in T.serial(16):
            A[i] = 0

    _check(before, expected, np.arange(16, dtype="int32"))


def test_an_assumed_value_decides_an_if_then_else_before_the_write_of_its_iteration():
    @T.prim_func
    def before(A: T.Buffer(16, "int32"), B: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            B[i] = T.if_then_else(A[i] == 0, 1, 2)
            A[i] = B[i] + 5

    @T.prim_func
    def expected(A: T.Buffer(16, "int32"), B: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            B[i] = 1
            A[i] = B[i] + 5

    _check(before, expected, _zeros(), _zeros())


def test_a_guarded_assumption_decides_only_the_branch_it_covers():
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            if 14 <= i:
                T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            if 14 <= i:
                if A[i] == 0:
                    A[i] = 42
            else:
                if A[i] == 0:
                    A[i] = 100

    @T.prim_func
    def expected(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            if 14 <= i:
                T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            if 14 <= i:
                A[i] = 42
            else:
                if A[i] == 0:
                    A[i] = 100

    inputs = np.array([0, 3] * 7 + [0, 0], dtype="int32")
    _check(before, expected, inputs)


def test_an_assumption_about_other_indices_decides_nothing():
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            if 14 <= i:
                T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            if i < 14:  # noqa: SIM102  (two statements, as TVM writes the case)
                if A[i] == 0:
                    A[i] = 42

    _check(before, before, np.array([0, 3] * 7 + [0, 0], dtype="int32"))


def test_a_scoped_assumption_does_not_hold_outside_its_condition():
    @T.prim_func
    def before(A: T.Buffer(16, "int32"), B: T.Buffer(16, "int32"), m: T.int32):
        for i in T.serial(16):
            if m == 0:
                T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            B[i] = T.if_then_else(A[i] == 0, 1, 2)

    after = _simplify(before)
    assert_structural_equal(after, before)
    _same_results(before, after, np.array([0, 3] * 8, dtype="int32"), _zeros(), 1)


def test_an_element_overwritten_earlier_in_the_iteration_is_not_assumed():
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            if i == 0:
                A[i] = 5
            if A[i] == 0:
                A[i] = 42

    _check(before, before, _zeros())


def test_an_assumed_value_is_used_until_the_write_in_the_same_iteration():
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            if A[i] == 0:
                A[i] = 17
            if i == 0:
                A[i] = 5
            if A[i] == 0:
                A[i] = 42

    @T.prim_func
    def expected(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            A[i] = 17
            if i == 0:
                A[i] = 5
            if A[i] == 0:
                A[i] = 42

    _check(before, expected, _zeros())


def test_a_loop_writing_the_next_element_keeps_its_condition():
    # Iteration i reads A[i], which iteration i - 1 may have written: no per-iteration fact.
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(15):
            if A[i] == 0:
                A[i + 1] = 7

    _check(before, before, _zeros())


def test_an_inner_loop_rewriting_one_element_keeps_its_condition():
    # Every iteration of j writes A[i]: only the first one may use the assumed value.
    @T.prim_func
    def before(A: T.Buffer(16, "int32")):
        for i in T.serial(16):
            T.evaluate(T.assume(A[i] == 0))
        for i in T.serial(16):
            for j in T.serial(4):
                if A[i] == 0:
                    A[i] = A[i] + j + 1

    _check(before, before, _zeros())
