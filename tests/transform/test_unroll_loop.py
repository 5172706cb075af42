"""UnrollLoop: small constant `T.unroll` loops whose body branches become copies of their body;
others stay loops for the C compiler (every small one is copied with `explicit_unroll`)."""

from __future__ import annotations

from tessel.driver import generate_c_source
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, IfThenElse
from tessel.transform import UnrollLoop


def _unroll(func: PrimFunc, **options: int | bool) -> PrimFunc:
    (name,) = IRModule.from_func(func).names()
    return UnrollLoop(**options)(IRModule.from_func(func))[name]


@T.prim_func
def _rotate_and_double(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    for i in range(8):
        for j in T.unroll(4):
            B[i, j] = A[i, (j + 1) % 4] * T.float32(2)


def test_an_unrolled_loop_of_extent_4_becomes_four_simplified_copies():
    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i in range(8):
            B[i, 0] = A[i, 1] * T.float32(2)
            B[i, 1] = A[i, 2] * T.float32(2)
            B[i, 2] = A[i, 3] * T.float32(2)
            B[i, 3] = A[i, 0] * T.float32(2)

    after = _unroll(_rotate_and_double, explicit_unroll=True)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    check_same_results(_rotate_and_double, after)


def test_a_branch_free_unrolled_loop_is_left_to_the_c_compiler():
    mod = IRModule.from_func(_rotate_and_double)
    assert UnrollLoop()(mod) is mod
    assert "#pragma GCC unroll 4" in generate_c_source(_rotate_and_double)
    # the interpreter against the C whose loop the pragma has the C compiler copy
    check_same_results(_rotate_and_double, _rotate_and_double)


def test_an_unrolled_loop_with_a_nonzero_min_and_an_inner_loop():
    @T.prim_func
    def before(A: T.Buffer((6, 3), "int32"), B: T.Buffer((6, 3), "int32")):
        for i in T.unroll(2, 5):
            for j in range(3):
                B[i, j] = A[i, j] + i

    after = _unroll(before, explicit_unroll=True)
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
    assert _unroll(before, max_extent=100, explicit_unroll=True) is not before  # an option
    assert "unroll" in generate_c_source(before)
    check_same_results(before, _unroll(before, max_extent=100, explicit_unroll=True))


def test_serial_loops_are_not_unrolled():
    @T.prim_func
    def before(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            B[i] = A[i]

    mod = IRModule.from_func(before)
    assert UnrollLoop()(mod) is mod


def test_a_tail_tile_s_guards_are_decided_by_the_loops_and_branch_around_it():
    """UnswitchGuards leaves a 13-column row in tiles of 7 as a full tile where `i_o * 7 + 6 <
    13` and the guarded tile in the else branch; i_o in [0, 2) makes i_o 1 there, so each
    unrolled copy's guard is decided: 6 unguarded stores, the seventh gone."""

    @T.prim_func
    def before(A: T.Buffer((13,), "float32"), B: T.Buffer((13,), "float32")):
        for i_o in range(2):
            if i_o * 7 + 6 < 13:
                for i_i in T.unroll(7):
                    B[i_o * 7 + i_i] = A[i_o * 7 + i_i] + T.float32(1)
            else:
                for i_i in T.unroll(7):
                    if i_o * 7 + i_i < 13:
                        B[i_o * 7 + i_i] = A[i_o * 7 + i_i] + T.float32(1)

    after = _unroll(before)
    else_case = after.body.body.else_case
    stores = [n for n in post_order(else_case) if isinstance(n, BufferStore)]
    assert len(stores) == 6
    assert not any(isinstance(n, IfThenElse) for n in post_order(else_case))
    check_same_results(before, after)


def test_a_condition_reading_a_buffer_is_not_a_fact_for_the_copies():
    """`if A[0] < 1` may be made false by the branch's own stores: the copies inside do not
    assume it (the guards on i stay as the loop's range alone decides them)."""

    @T.prim_func
    def before(A: T.Buffer((4,), "int32")):
        if A[0] < 1:
            for i in T.unroll(4):
                if A[0] < 1:
                    A[i] = A[i] + 1

    after = _unroll(before)
    assert sum(isinstance(n, IfThenElse) for n in post_order(after.body)) == 5
    check_same_results(before, after)
