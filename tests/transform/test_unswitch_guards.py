"""UnswitchGuards: a tile's guards are tested once per tile (Before/Expected), invariant guards
leave the loops they do not depend on, and results agree before and after (interpreter, C)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.driver import build
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.tir import interpreter
from tessel.tir.stmt import Allocate, BufferStore, IfThenElse
from tessel.transform import lower
from tessel.transform.unswitch_guards import MAX_CONDITIONS, UnswitchGuards


def _unswitch(func):
    return UnswitchGuards()(IRModule.from_func(func))[func.name]


def _check(before, expected):
    after = _unswitch(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)


def test_a_tile_guard_is_tested_once_per_tile():
    @T.prim_func
    def before(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
        for i_o in range(16):
            for i_i in range(8):
                if i_o * 8 + i_i < 127:
                    B[i_o * 8 + i_i] = A[i_o * 8 + i_i] * T.float32(2)

    @T.prim_func
    def expected(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
        for i_o in range(16):
            if i_o < 15:
                for i_i in range(8):
                    B[i_o * 8 + i_i] = A[i_o * 8 + i_i] * T.float32(2)
            else:
                for i_i in range(8):
                    if i_o * 8 + i_i < 127:
                        B[i_o * 8 + i_i] = A[i_o * 8 + i_i] * T.float32(2)

    _check(before, expected)


def test_an_invariant_guard_leaves_the_inner_loop_and_its_failing_copy_is_removed():
    @T.prim_func
    def before(A: T.Buffer((10, 4), "float32")):
        for i in range(10):
            for j in range(4):
                if i < 7:
                    A[i, j] = T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((10, 4), "float32")):
        for i in range(10):
            if i < 7:
                for j in range(4):
                    A[i, j] = T.float32(1)

    _check(before, expected)


def test_greater_than_guards_are_unswitched_on_their_minimum():
    @T.prim_func
    def before(A: T.Buffer((20,), "float32")):
        for i_o in range(5):
            for i_i in range(4):
                if 17 >= i_o * 4 + i_i and i_o * 4 + i_i > 2:
                    A[i_o * 4 + i_i] = T.float32(1)

    after = _unswitch(before)
    outer = after.body.body
    assert isinstance(outer, IfThenElse) and outer.else_case is not None
    # The guard-free copy runs only for tiles 1..3 (elements 4..15).
    a = np.zeros(20, "float32")
    interpreter.run(after, a)
    np.testing.assert_array_equal(np.nonzero(a)[0], np.arange(3, 18))


def test_guards_reading_buffers_or_inner_lets_stay_where_they_are():
    @T.prim_func
    def reads(A: T.Buffer((8, 4), "float32"), M: T.Buffer((8,), "int32")):
        for i in range(8):
            for j in range(4):
                if M[i] < 3:
                    A[i, j] = T.float32(1)

    @T.prim_func
    def inner_let(A: T.Buffer((8, 4), "float32")):
        for i in range(8):
            for j in range(4):
                for r in range(2):
                    k = T.int32(i * 4 + j)
                    if k + r < 30:
                        A[i, j] = T.float32(1)

    for func in (reads, inner_let):
        assert _unswitch(func).body is func.body


def test_nothing_changes_without_guards_under_loops():
    @T.prim_func
    def plain(A: T.Buffer((8,), "float32")):
        for i in range(8):
            if i < 5:
                A[i] = T.float32(1)

    assert _unswitch(plain).body is plain.body


def test_a_two_dimensional_tile_has_at_most_four_copies_per_loop_body():
    @T.prim_func
    def tile(A: T.Buffer((10, 13), "float32")):
        for fused in range(16):
            for i_i, j_i in T.grid(3, 4):
                if fused // 4 * 3 + i_i < 10 and fused % 4 * 4 + j_i < 13:
                    A[fused // 4 * 3 + i_i, fused % 4 * 4 + j_i] = T.float32(fused)

    after = _unswitch(tile)
    loop = after.body
    top = loop.body
    assert isinstance(top, IfThenElse)
    copies = [s for s in (top.then_case, top.else_case) for s in (s.then_case, s.else_case)]
    assert len(copies) == 2**MAX_CONDITIONS
    # The copy where both hold has no guard left.
    assert not [n for n in post_order(copies[0]) if isinstance(n, IfThenElse)]
    a, b = np.zeros((10, 13), "float32"), np.zeros((10, 13), "float32")
    interpreter.run(tile, a)
    interpreter.run(after, b)
    np.testing.assert_array_equal(a, b)


def _matmul(n: int):
    @T.prim_func
    def matmul(
        A: T.Buffer((n, n), "float32"),
        B: T.Buffer((n, n), "float32"),
        C: T.Buffer((n, n), "float32"),
    ):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return matmul


def _tiled(n: int, rows: int, columns: int):
    func = _matmul(n)
    sch = Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i_o, i_i = sch.split(i, [None, rows])
    j_o, j_i = sch.split(j, [None, columns])
    sch.reorder(i_o, j_o, k, i_i, j_i)
    sch.vectorize(j_i)
    sch.parallel(sch.fuse(i_o, j_o))
    return func, sch.mod


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 19), rows=st.integers(1, 5), columns=st.sampled_from([4, 8, 16]))
def test_tiled_matmul_with_tails_agrees_in_interpreter_and_c(n, rows, columns):
    func, scheduled = _tiled(n, rows, columns)
    check_same_results(func, scheduled)


def test_tiled_matmul_tail_has_a_guard_free_copy_and_matches_numpy():
    _, scheduled = _tiled(13, 4, 8)
    lowered = lower(scheduled, verify=True)["main"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 13, 13)).astype("float32")
    c = np.zeros((13, 13), "float32")
    build(scheduled)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    c_interpreted = np.zeros((13, 13), "float32")
    interpreter.run(lowered, a, b, c_interpreted)
    np.testing.assert_allclose(c_interpreted, a @ b, rtol=1e-5, atol=1e-5)
    # Some vector store of C is unpredicated: the full tiles run without masks.
    stores = [
        n
        for n in post_order(lowered.body)
        if getattr(n, "buffer", None) is not None
        and n.buffer.name == "C"
        and type(n).__name__ == "BufferStore"
        and n.value.dtype.is_vector
    ]
    assert any(store.predicate is None for store in stores)
    assert any(store.predicate is not None for store in stores)


def test_copies_allocate_under_their_own_variables():
    # Fuzz campaign 10, case 13510: both copies of a loop body allocated one variable, and
    # StorageRewrite, sharing the failing copy's buffer with an accumulator, rewrote both.
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i_o in range(4):
            for i_i in range(5):
                X = T.allocate([1], "float32", "global")
                Xb = T.decl_buffer((1,), "float32", data=X)
                if i_o * 5 + i_i < 16:
                    Xb[0] = A[i_o * 5 + i_i] * T.float32(2)
                    B[i_o * 5 + i_i] = Xb[0]

    after = _unswitch(before)
    assert isinstance(after.body.body, IfThenElse)  # the tile loop split in two copies
    variables = [n.buffer_var for n in post_order(after.body) if isinstance(n, Allocate)]
    assert len(variables) == 2 and variables[0] is not variables[1]
    check_same_results(before, after)


def test_a_condition_an_earlier_one_decides_makes_no_dead_copy():
    # Fuzz seed 21, case 1933: where `i < 2` holds, `i < 3` does too; the copy for `i < 2 and
    # not i < 3` never runs, yet gcc 12 at -O3 let its stores change the result.
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(4):
            for j in range(4):
                if i * 4 + j < 10:
                    B[i * 4 + j] = A[i * 4 + j]
                if i * 4 + j < 13:
                    B[i * 4 + j] = B[i * 4 + j] + T.float32(1)

    after = _unswitch(before)
    stores = [n for n in post_order(after.body) if isinstance(n, BufferStore)]
    assert len(stores) == 6  # two per copy: both guards hold; only the second; the general one
    check_same_results(before, after)
