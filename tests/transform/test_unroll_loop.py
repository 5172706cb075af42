"""UnrollLoop: small constant `T.unroll` loops become copies of their body; others stay loops."""

from __future__ import annotations

from tessel.driver import generate_c_source
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind
from tessel.transform import UnrollLoop


def _unroll(func: PrimFunc, **options: int) -> PrimFunc:
    (name,) = IRModule.from_func(func).names()
    return UnrollLoop(**options)(IRModule.from_func(func))[name]


def test_an_unrolled_loop_of_extent_4_becomes_four_simplified_copies():
    @T.prim_func
    def before(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i in range(8):
            for j in T.unroll(4):
                B[i, j] = A[i, (j + 1) % 4] * T.float32(2)

    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i in range(8):
            B[i, 0] = A[i, 1] * T.float32(2)
            B[i, 1] = A[i, 2] * T.float32(2)
            B[i, 2] = A[i, 3] * T.float32(2)
            B[i, 3] = A[i, 0] * T.float32(2)

    after = _unroll(before)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    check_same_results(before, after)


def test_an_unrolled_loop_with_a_nonzero_min_and_an_inner_loop():
    @T.prim_func
    def before(A: T.Buffer((6, 3), "int32"), B: T.Buffer((6, 3), "int32")):
        for i in T.unroll(2, 5):
            for j in range(3):
                B[i, j] = A[i, j] + i

    after = _unroll(before)
    loops = [n for n in post_order(after.body) if isinstance(n, For)]
    assert [loop.kind for loop in loops] == [ForKind.SERIAL] * 3
    check_same_results(before, after)


def test_an_unrolled_loop_of_extent_100_stays_a_loop_for_the_c_pragma():
    @T.prim_func
    def before(A: T.Buffer((100,), "int32"), B: T.Buffer((100,), "int32")):
        for i in T.unroll(100):
            B[i] = A[i] * 3

    mod = IRModule.from_func(before)
    assert UnrollLoop()(mod) is mod
    assert _unroll(before, max_extent=100) is not before  # the limit is a pass option
    assert "unroll" in generate_c_source(before)
    check_same_results(before, _unroll(before, max_extent=100))


def test_serial_loops_are_not_unrolled():
    @T.prim_func
    def before(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            B[i] = A[i]

    mod = IRModule.from_func(before)
    assert UnrollLoop()(mod) is mod
