"""Fuzzer regressions: blockize after a split whose factor overshoots the extent (campaign seed 0
cases 46, 80, 1449, 1905; seed 1 cases 70, 278; seed 2 cases 632, 803, 1975), and
reverse_compute_inline of a padding consumer (seed 0 cases 67, 1938; seed 1 case 148; seed 2
case 535)."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def mod_three(A: T.Buffer((1,), "int32"), B: T.Buffer((1,), "int32")):
    for i in range(1):
        with T.block("B"):
            vi = T.axis.spatial(1, i)
            B[vi] = A[vi] % 3


def test_blockize_keeps_an_outer_predicate_over_the_outer_loops():
    """Seed 0, case 46: split 1 by [2, None] leaves `i_0 + i_1 < 1`; blockize at `i_1` used to
    drop it and give the outer iterator the domain 2, storing past the end of `B`."""

    @T.prim_func
    def expected(A: T.Buffer((1,), "int32"), B: T.Buffer((1,), "int32")):
        for i_0 in range(2):
            with T.block("B_o"):
                vi = T.axis.spatial(1, i_0)
                T.where(i_0 < 1)
                for i_1 in range(1):
                    with T.block("B"):
                        B[vi] = A[vi] % 3

    def steps(sch: Schedule) -> None:
        (i,) = sch.get_loops(sch.get_block("B"))
        _, i_1 = sch.split(i, [2, None])
        sch.blockize(i_1)

    check_schedule(mod_three, steps, expected)


@T.prim_func
def add_one(A: T.Buffer((3,), "int32"), B: T.Buffer((3,), "int32")):
    for i in range(3):
        with T.block("B"):
            vi = T.axis.spatial(3, i)
            B[vi] = A[vi] + 1


def test_blockize_keeps_an_inner_predicate_over_the_inner_loops():
    """Split 3 by [1, 4]: the bound `i_0 * 4 + i_1 < 3` lies in the inner subspace (the unit loop
    i_0 stays in it, as TVM keeps unit loops) and stays there; the outer block's regions are cut
    to the buffers (they relax to `[0:4]`)."""

    @T.prim_func
    def expected(A: T.Buffer((3,), "int32"), B: T.Buffer((3,), "int32")):
        with T.block("B_o"):
            vi_o = T.axis.spatial(1, 0)
            T.reads(A[0:3])
            T.writes(B[0:3])
            for i_0, i_1 in T.grid(1, 4):
                with T.block("B"):
                    vi = T.axis.spatial(3, i_0 * 4 + i_1)
                    T.where(i_0 * 4 + i_1 < 3)
                    B[vi] = A[vi] + 1

    def steps(sch: Schedule) -> None:
        (i,) = sch.get_loops(sch.get_block("B"))
        i_0, _ = sch.split(i, [1, 4])
        sch.blockize(i_0)

    check_schedule(add_one, steps, expected)


@T.prim_func
def add_one_5(A: T.Buffer((5,), "int32"), B: T.Buffer((5,), "int32")):
    for i in range(5):
        with T.block("B"):
            vi = T.axis.spatial(5, i)
            B[vi] = A[vi] + 1


def test_blockize_refuses_a_predicate_spanning_both_subspaces():
    """Split 5 by [2, 3]: `i_0 * 3 + i_1 < 5` cannot be divided between the blocks (as TVM)."""
    sch = Schedule(add_one_5)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, i_1 = sch.split(i, [2, 3])
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.blockize(i_1)
    assert err.value.rule == "blockize.subspace-divide"
    assert_structural_equal(sch.func, before)


@T.prim_func
def pad_one(A: T.Buffer((1,), "int32"), B: T.Buffer((3,), "int32")):
    for i in range(3):
        with T.block("B"):
            vi = T.axis.spatial(3, i)
            T.reads(A[vi - 1])
            B[vi] = T.if_then_else(1 <= vi and vi < 2, A[vi - 1], 0)


def test_cache_read_after_blockize_of_a_pad_copies_only_the_buffer():
    """Seed 1, case 70: the outer block declared `A[-1:2]`, and cache_read copied that region."""

    @T.prim_func
    def expected(A: T.Buffer((1,), "int32"), B: T.Buffer((3,), "int32")):
        with T.block("B_o"):
            vi_o = T.axis.spatial(1, 0)
            T.reads(A[0])
            T.writes(B[0:3])
            A_global = T.alloc_buffer((1,), "int32")
            for ax0 in range(1):
                with T.block("A_global"):
                    v0 = T.axis.spatial(1, ax0)
                    A_global[v0] = A[v0]
            for i in range(3):
                with T.block("B"):
                    vi = T.axis.spatial(3, i)
                    T.reads(A_global[vi - 1])
                    B[vi] = T.if_then_else(1 <= vi and vi < 2, A_global[vi - 1], 0)

    def steps(sch: Schedule) -> None:
        block = sch.get_block("B")
        (i,) = sch.get_loops(block)
        sch.blockize(i)
        sch.cache_read(block, 0, "global")

    check_schedule(pad_one, steps, expected)


@T.prim_func
def add_then_pad(
    A: T.Buffer((1, 1), "float32"), A1: T.Buffer((1,), "float32"), B: T.Buffer((1, 3), "float32")
):
    T2 = T.alloc_buffer((1, 1), "float32")
    for i0, i1 in T.grid(1, 1):
        with T.block("T2"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            T2[v0, v1] = A[v0, v1] + A1[v1]
    for i0, i1 in T.grid(1, 3):
        with T.block("B"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            T.reads(T2[v0, v1 - 1])
            B[v0, v1] = T.if_then_else(1 <= v1 and v1 < 2, T2[v0, v1 - 1], T.float32(0))


def test_reverse_compute_inline_of_a_padding_consumer_is_refused_unchanged():
    """Seed 2, case 535: the pad's border instances load past what `T2` stores; inlined into
    `T2` they had no instance to live in, and `B[0, 0]`, `B[0, 2]` were never written."""
    sch = Schedule(add_then_pad)
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_inline(sch.get_block("B"))
    assert err.value.rule == "reverse_compute_inline.not-covered"
    assert_structural_equal(sch.func, add_then_pad)


@T.prim_func
def pad_twice(A: T.Buffer((1,), "float32"), B: T.Buffer((7,), "float32")):
    T2 = T.alloc_buffer((5,), "float32")
    for i in range(5):
        with T.block("T2"):
            vi = T.axis.spatial(5, i)
            T.reads(A[vi - 2])
            T2[vi] = T.if_then_else(2 <= vi and vi < 3, A[vi - 2], T.float32(0))
    for i in range(7):
        with T.block("B"):
            vi = T.axis.spatial(7, i)
            T.reads(T2[vi - 1])
            B[vi] = T.if_then_else(1 <= vi and vi < 6, T2[vi - 1], T.float32(0))


def test_reverse_compute_inline_of_a_pad_of_a_pad_is_refused_unchanged():
    """Seed 0, case 67: the same, with the producer itself a pad."""
    sch = Schedule(pad_twice)
    with pytest.raises(ScheduleError, match="not-covered"):
        sch.reverse_compute_inline(sch.get_block("B"))
    assert_structural_equal(sch.func, pad_twice)


@T.prim_func
def add_then_crop(A: T.Buffer((5,), "float32"), B: T.Buffer((3,), "float32")):
    T2 = T.alloc_buffer((5,), "float32")
    for i in range(5):
        with T.block("T2"):
            vi = T.axis.spatial(5, i)
            T2[vi] = A[vi] + T.float32(1)
    for i in range(3):
        with T.block("B"):
            vi = T.axis.spatial(3, i)
            B[vi] = T2[vi + 1] * T.float32(2)


def test_reverse_compute_inline_of_a_crop_inside_the_producer_still_inlines():
    """A consumer that loads only what the producer stores is inlined, under a predicate."""

    @T.prim_func
    def expected(A: T.Buffer((5,), "float32"), B: T.Buffer((3,), "float32")):
        for i in range(5):
            with T.block("T2"):
                vi = T.axis.spatial(5, i)
                T.where(1 <= i and i < 4)
                B[vi - 1] = (A[vi] + T.float32(1)) * T.float32(2)

    def steps(sch: Schedule) -> None:
        sch.reverse_compute_inline(sch.get_block("B"))

    check_schedule(add_then_crop, steps, expected)


@T.prim_func
def sum_two(A: T.Buffer((2,), "float32"), B: T.Buffer((1,), "float32")):
    for i, r in T.grid(1, 2):
        with T.block("B"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vr]


def test_a_second_blockize_keeps_a_bound_the_division_folded_into_an_extent():
    """Seed 2, case 1975: split 2 by [8, None] leaves `r_0 + r_1 < 2`; after one blockize the
    inner block is guarded by `r_0 < 2`, and blockizing its loops again folded that bound into
    the iterator's extent and dropped it, binding the reduction iterator past its domain. (Without preserve_unit_iters the unit loop
    r_1 leaves the bindings, as it did then.)"""

    def steps(sch: Schedule) -> None:
        _, r = sch.get_loops(sch.get_block("B"))
        sch.split(r, [8, None])
        _, r_0, _ = sch.get_loops(sch.get_block("B"))
        sch.blockize(r_0, preserve_unit_iters=False)
        r_0, _ = sch.get_loops(sch.get_block("B"))
        sch.blockize(r_0, preserve_unit_iters=False)

    sch = check_schedule(sum_two, steps)
    assert "T.where(r_0 < 2)" in sch.func.script()
