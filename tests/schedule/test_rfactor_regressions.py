"""rfactor regressions (issue 12): predicates from `split`, and loops shared with other blocks.

Each case runs before/after in the reference interpreter and as C on the same random inputs, or
checks that the refusal names its rule and leaves the schedule's function as it was.
"""

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_same_results, check_schedule


@T.prim_func
def rowsum(A: T.Buffer((2, 3), "int32"), C: T.Buffer((2,), "int32")):
    for i, k in T.grid(2, 3):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = 0
            C[vi] = C[vi] + A[vi, vk]


@T.prim_func
def mm_epi(
    A: T.Buffer((2, 3), "int32"), B: T.Buffer((3, 2), "int32"), D: T.Buffer((2, 2), "int32")
):
    Acc = T.alloc_buffer((2, 2), "int32")
    for i, j, k in T.grid(2, 2, 3):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Acc[vi, vj] = 0
            Acc[vi, vj] = Acc[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(2, 2):
        with T.block("epi"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = Acc[vi, vj] + 1


def _assert_refused(sch: Schedule, step, rule: str) -> None:
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        step()
    assert err.value.rule == rule
    assert sch.func is before
    assert_structural_equal(sch.func, before)


# ---------------------------------------------------------------------- predicates


def test_rfactor_of_a_padded_reduction_loop_initialises_every_slot_it_sums():
    @T.prim_func
    def expected(A: T.Buffer((2, 3), "int32"), C: T.Buffer((2,), "int32")):
        C_rf = T.alloc_buffer((4, 2), "int32")
        for i, k_0, k_1 in T.grid(2, 1, 4):
            with T.block("C_rf"):
                vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                T.where(k_0 * 4 + k_1 < 3)
                with T.init():
                    C_rf[vk_1, vi] = 0
                C_rf[vk_1, vi] = C_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
        for i, k_1 in T.grid(2, 4):
            with T.block("C"):
                vk_1, vi = T.axis.remap("RS", [k_1, i])
                T.where(k_1 < 3)
                with T.init():
                    C[vi] = 0
                C[vi] = C[vi] + C_rf[vk_1, vi]

    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        _, k1 = sch.split(k, [None, 4])
        sch.rfactor(k1, factor_axis=0)

    check_schedule(rowsum, steps, expected)


def test_rfactor_of_the_outer_part_of_a_padded_reduction_loop():
    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        k0, _ = sch.split(k, [None, 2])
        sch.rfactor(k0, factor_axis=1)

    check_schedule(rowsum, steps)


def test_rfactor_keeps_a_padded_spatial_loop_in_bounds_in_the_write_back():
    @T.prim_func
    def expected(A: T.Buffer((2, 3), "int32"), C: T.Buffer((2,), "int32")):
        C_rf = T.alloc_buffer((3, 2), "int32")
        for i_0, i_1, k in T.grid(1, 4, 3):
            with T.block("C_rf"):
                vk = T.axis.spatial(3, k)
                vi = T.axis.spatial(2, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 2)
                with T.init():
                    C_rf[vk, vi] = 0
                C_rf[vk, vi] = C_rf[vk, vi] + A[vi, vk]
        for i_0, i_1, k in T.grid(1, 4, 3):
            with T.block("C"):
                vk = T.axis.reduce(3, k)
                vi = T.axis.spatial(2, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 2)
                with T.init():
                    C[vi] = 0
                C[vi] = C[vi] + C_rf[vk, vi]

    def steps(sch):
        i, k = sch.get_loops(sch.get_block("C"))
        sch.split(i, [None, 4])
        sch.rfactor(k, factor_axis=0)

    check_schedule(rowsum, steps, expected)


def test_rfactor_refuses_a_predicate_that_skips_the_first_reduction_step():
    @T.prim_func
    def shifted(A: T.Buffer((2, 3), "int32"), C: T.Buffer((2,), "int32")):
        for i, k in T.grid(2, 4):
            with T.block("C"):
                vi = T.axis.spatial(2, i)
                vk = T.axis.reduce(3, k - 1)
                T.where(k >= 1)
                with T.init():
                    C[vi] = 0
                C[vi] = C[vi] + A[vi, vk]

    sch = Schedule(shifted)
    _, k = sch.get_loops(sch.get_block("C"))
    _assert_refused(sch, lambda: sch.rfactor(k, 0), "rfactor.predicate")


# ---------------------------------------------------------------------- shared loops


def test_rfactor_after_compute_at_writes_back_before_the_consumer():
    @T.prim_func
    def expected(
        A: T.Buffer((2, 3), "int32"), B: T.Buffer((3, 2), "int32"), D: T.Buffer((2, 2), "int32")
    ):
        Acc = T.alloc_buffer((2, 2), "int32")
        Acc_rf = T.alloc_buffer((3, 2, 2), "int32")
        for i in range(2):
            for ax0, ax1 in T.grid(2, 3):
                with T.block("mm_rf"):
                    vax1, vi, vj = T.axis.remap("SSS", [ax1, i, ax0])
                    with T.init():
                        Acc_rf[vax1, vi, vj] = 0
                    Acc_rf[vax1, vi, vj] = Acc_rf[vax1, vi, vj] + A[vi, vax1] * B[vax1, vj]
            for ax0, ax1 in T.grid(2, 3):
                with T.block("mm"):
                    vax1, vi, vj = T.axis.remap("RSS", [ax1, i, ax0])
                    with T.init():
                        Acc[vi, vj] = 0
                    Acc[vi, vj] = Acc[vi, vj] + Acc_rf[vax1, vi, vj]
            for j in range(2):
                with T.block("epi"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    D[vi, vj] = Acc[vi, vj] + 1

    def steps(sch):
        mm = sch.get_block("mm")
        sch.compute_at(mm, sch.get_loops(sch.get_block("epi"))[0])
        sch.rfactor(sch.get_loops(mm)[-1], factor_axis=0)

    check_schedule(mm_epi, steps, expected)


@pytest.mark.parametrize("depth", [0, 1])
def test_rfactor_after_reverse_compute_at_writes_back_before_the_consumer(depth):
    def steps(sch):
        mm = sch.get_block("mm")
        sch.reverse_compute_at(sch.get_block("epi"), sch.get_loops(mm)[depth])
        sch.rfactor(sch.get_loops(mm)[-1], factor_axis=2)

    check_schedule(mm_epi, steps)


def test_rfactor_refuses_a_reduction_loop_shared_with_another_block():
    @T.prim_func
    def shared(
        A: T.Buffer((2, 4), "int32"), C: T.Buffer((2,), "int32"), E: T.Buffer((2, 2), "int32")
    ):
        for i, k_0 in T.grid(2, 2):
            for k_1 in range(2):
                with T.block("C"):
                    vi = T.axis.spatial(2, i)
                    vk = T.axis.reduce(4, k_0 * 2 + k_1)
                    with T.init():
                        C[vi] = 0
                    C[vi] = C[vi] + A[vi, vk]
            with T.block("E"):
                vi, vk_0 = T.axis.remap("SS", [i, k_0])
                E[vi, vk_0] = A[vi, vk_0]

    sch = Schedule(shared)
    k1 = sch.get_loops(sch.get_block("C"))[-1]
    _assert_refused(sch, lambda: sch.rfactor(k1, 0), "rfactor.shared-reduction-loop")


def test_rfactor_refuses_a_loop_bound_to_both_kinds_of_iterator():
    # `i` fused with the outer part of `k`: rfactor on the inner part would initialise the
    # partial sums of the first row only (the init runs where the fused loop is 0).
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("C"))
    k0, k1 = sch.split(k, [None, 2])
    sch.fuse(i, k0)
    _assert_refused(sch, lambda: sch.rfactor(k1, 0), "rfactor.mixed-loop")


# ---------------------------------------------------------------------- property


def _row_sum(rows: int, cols: int):
    @T.prim_func
    def row_sum(A: T.Buffer((rows, cols), "int32"), C: T.Buffer((rows,), "int32")):
        for i, k in T.grid(rows, cols):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = 0
                C[vi] = C[vi] + A[vi, vk]

    return row_sum


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 7),
    cols=st.integers(1, 7),
    i_factor=st.one_of(st.none(), st.integers(1, 8)),
    k_factors=st.lists(st.integers(1, 8), max_size=2),
    reverse=st.booleans(),
    pick=st.integers(0, 10),
    factor_axis=st.integers(-2, 1),
)
def test_rfactor_of_a_split_row_sum_is_refused_or_exact(
    rows, cols, i_factor, k_factors, reverse, pick, factor_axis
):
    before = _row_sum(rows, cols)
    sch = Schedule(before)
    block = sch.get_block("C")
    if i_factor is not None:
        sch.split(sch.get_loops(block)[0], [None, i_factor])
    for factor in k_factors:
        sch.split(sch.get_loops(block)[-1], [None, factor])
    loops = sch.get_loops(block)
    if reverse:
        with contextlib.suppress(ScheduleError):  # reorder's refusals are not the point here
            sch.reorder(*reversed(loops))
    target = loops[pick % len(loops)]
    scheduled = sch.func
    try:
        sch.rfactor(target, factor_axis)
    except ScheduleError:
        assert sch.func is scheduled
        assert_structural_equal(sch.func, scheduled)
        return
    check_same_results(before, sch.func)


@T.prim_func
def rowsum_long(A: T.Buffer((2, 16), "float32"), C: T.Buffer((2,), "float32")):
    for i, k in T.grid(2, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]


def test_rfactor_of_a_write_back_takes_fresh_names():
    """The write-back keeps the block's name, so factoring it again (a tree of partial
    results) must not make a second `C_rf` block or buffer."""

    def steps(sch):
        k = sch.get_loops(sch.get_block("C"))[-1]
        _, inner = sch.split(k, [None, 8])
        first = sch.rfactor(inner, factor_axis=0)
        _, lanes = sch.split(sch.get_loops(sch.get_block("C"))[-1], [None, 4])
        second = sch.rfactor(lanes, factor_axis=0)
        assert (first.name, second.name) == ("C_rf", "C_rf_1")

    sch = check_schedule(rowsum_long, steps)
    allocated = [b.name for b in sch.func.body.block.alloc_buffers]
    assert sorted(allocated) == ["C_rf", "C_rf_1"]
