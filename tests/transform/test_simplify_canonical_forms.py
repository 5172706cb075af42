"""Simplify leaves TVM's canonical index forms in programs: a middle digit of a fused loop is
`fused % (l * e) // l`, and constant factors of a symbolic extent fold (`n * 16`). Before/Expected
in TVM's printed form, then both run on random inputs."""

from __future__ import annotations

from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.function import PrimFunc
from tessel.transform import Simplify


def _simplify(func: PrimFunc) -> PrimFunc:
    (name,) = IRModule.from_func(func).names()
    return Simplify()(IRModule.from_func(func))[name]


def _check(before: PrimFunc, expected: PrimFunc) -> PrimFunc:
    after = _simplify(before)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    return after


def test_the_middle_digit_of_a_fused_index_takes_tvm_form():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((4, 4, 4), "float32")):
        for fused in range(64):
            B[fused // 16, fused // 4 % 4, fused % 4] = A[fused]

    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), B: T.Buffer((4, 4, 4), "float32")):
        for fused in range(64):
            B[fused // 16, fused % 16 // 4, fused % 4] = A[fused]

    check_same_results(before, _check(before, expected))


def test_the_digits_of_a_fused_index_join_back_in_tvm_form():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for fused in range(64):
            B[fused // 16 * 16 + fused % 16 // 4 * 4 + fused % 4] = A[fused]

    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for fused in range(64):
            B[fused] = A[fused]

    check_same_results(before, _check(before, expected))


def test_constant_factors_of_a_symbolic_extent_fold():
    @T.prim_func
    def before(a: T.handle, b: T.handle, n: T.int32):
        A = T.match_buffer(a, (n, 16), "float32")
        B = T.match_buffer(b, (n, 16), "float32")
        for fused in range(n * 4 * 4):
            B[fused // 16, fused % 16] = A[fused // 16, fused % 16]

    @T.prim_func
    def expected(a: T.handle, b: T.handle, n: T.int32):
        A = T.match_buffer(a, (n, 16), "float32")
        B = T.match_buffer(b, (n, 16), "float32")
        for fused in range(n * 16):
            B[fused // 16, fused % 16] = A[fused // 16, fused % 16]

    check_same_results(before, _check(before, expected), shape_vars={"n": 2}, scalars={"n": 2})
