"""Fuzzer regressions (issue 12): reindex of a guarded or windowed read copied out of bounds
(campaign seed 0 cases 638, 679, 1862; seed 2 case 117); reindex of a write after
decompose_reduction, compute_at or reverse_compute_at read what nothing wrote (seed 0 cases
930, 1122, 1626); cache_write after transform_layout with unspecified padding copied the
padding nothing wrote (seed 0 case 72, seed 2 case 796). A guarded reindex copy: compute_at
dropped its guard (seed 1 case 1689), transform_layout dropped it when rebuilding the copy (seed 0
case 1293 before pad_einsum joined the fuzzer), cache_read copied the points it leaves unwritten
(seed 0 case 1147, likewise). reverse_compute_at of a reduction under its producer's parallel
loop raced (seed 0 case 672)."""

import pytest

from tessel import te, topi
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_layout_schedule, check_schedule

# -- reindex of a read the block guards ---------------------------------------------------------


@T.prim_func
def pad_1d(A0: T.Buffer((1,), "int32"), T1: T.Buffer((3,), "int32")):
    for i0 in range(3):
        with T.block("T1"):
            v_i0 = T.axis.spatial(3, i0)
            T.reads(A0[v_i0 - 1])
            T.writes(T1[v_i0])
            T1[v_i0] = T.if_then_else(v_i0 >= 1 and v_i0 < 2, A0[v_i0 - 1], 0)


def test_reindex_of_a_padding_read_copies_only_the_points_inside_the_buffer():
    @T.prim_func
    def expected(A0: T.Buffer((1,), "int32"), T1: T.Buffer((3,), "int32")):
        A0_reindex = T.alloc_buffer((3,), "int32")
        for ax0 in range(3):
            with T.block("A0_reindex"):
                v0 = T.axis.spatial(3, ax0)
                T.where(1 <= ax0 and ax0 < 2)  # noqa: SIM300  (as the simplifier prints it)
                T.reads(A0[v0 - 1])
                T.writes(A0_reindex[v0])
                A0_reindex[v0] = A0[v0 - 1]
        for i0 in range(3):
            with T.block("T1"):
                v_i0 = T.axis.spatial(3, i0)
                T.reads(A0_reindex[v_i0])
                T.writes(T1[v_i0])
                T1[v_i0] = T.if_then_else(v_i0 >= 1 and v_i0 < 2, A0_reindex[v_i0], 0)

    check_schedule(pad_1d, lambda sch: sch.reindex(sch.get_block("T1"), ("read", 0)), expected)


@T.prim_func
def pad_2d(A0: T.Buffer((1, 1), "int32"), T1: T.Buffer((1, 3), "int32")):
    for i0, i1 in T.grid(1, 3):
        with T.block("T1"):
            v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
            T.reads(A0[v_i0, v_i1 - 1])
            T.writes(T1[v_i0, v_i1])
            T1[v_i0, v_i1] = T.if_then_else(v_i1 >= 1 and v_i1 < 2, A0[v_i0, v_i1 - 1], 0)


def test_reindex_of_a_2d_padding_read_runs():  # seed 2, case 117
    check_schedule(pad_2d, lambda sch: sch.reindex(sch.get_block("T1"), ("read", 0)))


@T.prim_func
def window_sum(A0: T.Buffer((2, 3), "float32"), T1: T.Buffer((2, 1), "float32")):
    for i0, i1, r in T.grid(2, 1, 3):
        with T.block("T1"):
            v_i0, v_i1, v_r = T.axis.remap("SSR", [i0, i1, r])
            T.reads(A0[v_i0, v_i1 + v_r])
            T.writes(T1[v_i0, v_i1])
            with T.init():
                T1[v_i0, v_i1] = T.float32(0.0)
            T1[v_i0, v_i1] = T1[v_i0, v_i1] + A0[v_i0, v_i1 + v_r]


def test_reindex_of_a_windowed_read_after_a_shifted_layout():  # seed 0, case 638
    def steps(sch: Schedule) -> None:
        block = sch.get_block("T1")
        sch.transform_layout(block, ("write", 0), lambda i0, i1: (i0 + 1, i1), pad_value=0.0)
        sch.reindex(sch.get_block("T1"), ("read", 0))

    check_layout_schedule(window_sum, steps)


@T.prim_func
def scale_then_max(A0: T.Buffer((1, 2, 3), "int32"), T3: T.Buffer((1, 2), "int32")):
    T2 = T.alloc_buffer((1, 2, 3), "int32")
    for i0, i1, i2 in T.grid(1, 2, 3):
        with T.block("T2"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            T2[v_i0, v_i1, v_i2] = A0[v_i0, v_i1, v_i2] * 3
    for i0, i1, r in T.grid(1, 2, 3):
        with T.block("T3"):
            v_i0, v_i1, v_r = T.axis.remap("SSR", [i0, i1, r])
            with T.init():
                T3[v_i0, v_i1] = -2147483648
            T3[v_i0, v_i1] = T.max(T3[v_i0, v_i1], T2[v_i0, v_i1, v_r])


def test_reindex_of_a_read_after_buffer_split_padding():  # seed 0, case 1862
    def steps(sch: Schedule) -> None:
        axes = sch.get_buffer_axes(sch.get_block("T3"), ("write", 0))
        sch.buffer_split(axes[1], [None, 4], pad_value=0)
        sch.reindex(sch.get_block("T3"), ("read", 0))

    check_layout_schedule(scale_then_max, steps)


# -- reindex of a write ---------------------------------------------------------------------------


@T.prim_func
def matmul_after_pad(
    A0: T.Buffer((1, 3), "int32"), A4: T.Buffer((3, 1), "int32"), T5: T.Buffer((1, 1), "int32")
):
    for i0, i1, r in T.grid(1, 1, 3):
        with T.block("T5"):
            v_i0, v_i1, v_r = T.axis.remap("SSR", [i0, i1, r])
            with T.init():
                T5[v_i0, v_i1] = 0
            T5[v_i0, v_i1] = T5[v_i0, v_i1] + A0[v_i0, v_r] * A4[v_r, v_i1]


def test_reindex_write_of_an_update_without_init_is_refused_unchanged():  # seed 0, case 1122
    sch = Schedule(matmul_after_pad)
    sch.decompose_reduction(sch.get_block("T5"), sch.get_loops(sch.get_block("T5"))[0])
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.reindex(sch.get_block("T5"), ("write", 0))
    assert err.value.rule == "reindex.reads-old-value"
    assert sch.func is before


def test_reindex_read_of_a_buffer_the_block_also_writes_is_refused():
    sch = Schedule(matmul_after_pad)
    sch.decompose_reduction(sch.get_block("T5"), sch.get_loops(sch.get_block("T5"))[0])
    before = sch.func
    reads = [r.buffer.name for r in sch.block(sch.get_block("T5")).block.reads]
    with pytest.raises(ScheduleError) as err:
        sch.reindex(sch.get_block("T5"), ("read", reads.index("T5")))
    assert err.value.rule == "reindex.reads-own-output"
    assert sch.func is before


@T.prim_func
def add_then_sub(
    A0: T.Buffer((1, 2, 1), "int32"), A1: T.Buffer((1,), "int32"), T3: T.Buffer((1, 2, 1), "int32")
):
    T2 = T.alloc_buffer((1, 2, 1), "int32")
    for i0, i1, i2 in T.grid(1, 2, 1):
        with T.block("T2"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            T2[v_i0, v_i1, v_i2] = A0[v_i0, v_i1, v_i2] + A1[v_i2]
    for i0, i1, i2 in T.grid(1, 2, 1):
        with T.block("T3"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            T3[v_i0, v_i1, v_i2] = T2[v_i0, v_i1, v_i2] - A1[v_i2]


def test_reindex_write_of_a_producer_sharing_loops_with_its_consumer_is_refused():  # 1626
    sch = Schedule(add_then_sub)
    sch.compute_at(
        sch.get_block("T2"), sch.get_loops(sch.get_block("T3"))[1], preserve_unit_loops=False
    )
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.reindex(sch.get_block("T2"), ("write", 0))
    assert err.value.rule == "reindex.shared-nest"
    assert sch.func is before


def test_reindex_of_a_block_whose_outer_loop_holds_other_statements_is_refused():
    sch = Schedule(add_then_sub)
    sch.compute_at(sch.get_block("T2"), sch.get_loops(sch.get_block("T3"))[1])
    before = sch.func
    with pytest.raises(ScheduleError) as err:  # T3's loop i2 sits beside T2 under loop i1
        sch.reindex(sch.get_block("T3"), ("read", 1))
    assert err.value.rule == "reindex.loop-chain"
    assert sch.func is before


@T.prim_func
def transpose_of_sum(
    A0: T.Buffer((2, 2), "int32"), A3: T.Buffer((1,), "int32"), T5: T.Buffer((1, 2), "int32")
):
    T4 = T.alloc_buffer((2, 1), "int32")
    for i0, i1 in T.grid(2, 1):
        with T.block("T4"):
            v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
            T4[v_i0, v_i1] = A0[v_i0, v_i1] + A3[v_i1]
    for i0, i1 in T.grid(1, 2):
        with T.block("T5"):
            v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
            T5[v_i0, v_i1] = T4[v_i1, v_i0]


def test_reindex_write_after_reverse_compute_at_copies_after_the_whole_nest():  # seed 0, 930
    @T.prim_func
    def expected(
        A0: T.Buffer((2, 2), "int32"), A3: T.Buffer((1,), "int32"), T5: T.Buffer((1, 2), "int32")
    ):
        T4 = T.alloc_buffer((2, 1), "int32")
        T5_reindex = T.alloc_buffer((1, 2), "int32")
        for i0 in range(2):
            for i1 in range(1):
                with T.block("T4"):
                    v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                    T4[v_i0, v_i1] = A0[v_i0, v_i1] + A3[v_i1]
            with T.block("T5"):
                v_i0 = T.axis.spatial(1, 0)
                v_i1 = T.axis.spatial(2, i0)
                T.reads(T4[v_i1, v_i0])
                T.writes(T5_reindex[v_i0, v_i1])
                T5_reindex[v_i0, v_i1] = T4[v_i1, v_i0]
        for ax0, ax1 in T.grid(1, 2):
            with T.block("T5_reindex"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T5[v0, v1] = T5_reindex[v0, v1]

    def steps(sch: Schedule) -> None:
        sch.reverse_compute_at(
            sch.get_block("T5"), sch.get_loops(sch.get_block("T4"))[0], preserve_unit_loops=False
        )
        sch.reindex(sch.get_block("T5"), ("write", 0))

    check_schedule(transpose_of_sum, steps, expected)


# -- cache_write after transform_layout with unspecified padding ---------------------------------


@T.prim_func
def row_times_matrix(
    A0: T.Buffer((1, 1), "float32"),
    A1: T.Buffer((1, 3), "float32"),
    T2: T.Buffer((1, 3), "float32"),
):
    for i0, i1, r in T.grid(1, 3, 1):
        with T.block("T2"):
            v_i0, v_i1, v_r = T.axis.remap("SSR", [i0, i1, r])
            with T.init():
                T2[v_i0, v_i1] = T.float32(0.0)
            T2[v_i0, v_i1] = T2[v_i0, v_i1] + A0[v_i0, v_r] * A1[v_r, v_i1]


def _split_by_two(sch: Schedule) -> None:
    sch.transform_layout(
        sch.get_block("T2"),
        ("write", 0),
        lambda i0, i1: (i0, i1 // 2, i1 % 2),
        assume_injective_transform=True,
    )


def test_cache_write_skips_the_padding_nothing_writes():  # seed 2, case 796 (seed 0, 72)
    def steps(sch: Schedule) -> None:
        _split_by_two(sch)
        sch.cache_write(sch.get_block("T2"), 0, "global")

    sch = check_layout_schedule(row_times_matrix, steps)
    assert sch.block(sch.get_block("T2_global")).predicate is not None
    assert "T.where(not (ax2 == 1 and ax1 == 1))" in sch.func.script()


def test_cache_read_of_a_buffer_with_unspecified_padding_skips_it():
    @T.prim_func
    def two_stages(A: T.Buffer((3,), "float32"), C: T.Buffer((3,), "float32")):
        B = T.alloc_buffer((3,), "float32")
        for i in range(3):
            with T.block("B"):
                vi = T.axis.spatial(3, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(3):
            with T.block("C"):
                vi = T.axis.spatial(3, i)
                C[vi] = B[vi] + T.float32(1)

    def steps(sch: Schedule) -> None:
        sch.transform_layout(
            sch.get_block("B"),
            ("write", 0),
            lambda i: (i // 2, i % 2),
            assume_injective_transform=True,
        )
        sch.cache_read(sch.get_block("C"), 0, "shared")

    sch = check_schedule(two_stages, steps)
    assert "T.where" in sch.func.script()


def test_compute_at_keeps_the_guard_of_a_reindex_copy():  # seed 1, case 1689
    """The reindex copy of a padding read skips the points outside the buffer (T.where); moved
    under its consumer's loop, it must still skip them instead of reading A0[-1]."""

    def steps(sch):
        copy = sch.reindex(sch.get_block("T1"), ("read", 0))
        (loop,) = sch.get_loops(sch.get_block("T1"))
        sch.compute_at(copy, loop, preserve_unit_loops=False)

    sch = check_schedule(pad_1d, steps)
    assert "T.where" in sch.func.script()


def test_compute_at_refuses_a_predicate_it_cannot_carry():
    """A predicate over a loop the block's bindings do not name, stronger than the domains,
    cannot be rebuilt under new loops: refused, the schedule unchanged."""

    @T.prim_func
    def guarded(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,), "float32")
        for i_o, i_i in T.grid(2, 4):
            with T.block("B"):
                vi = T.axis.spatial(8, i_o * 4 + i_i)
                T.where(i_i < 3)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] + T.float32(1)

    sch = Schedule(guarded)
    (loop,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"compute_at\.predicate"):
        sch.compute_at(sch.get_block("B"), loop)
    assert sch.func is guarded


def test_transform_layout_keeps_the_guard_of_a_reindex_copy():  # seed 0, case 1293 (old)
    """transform_layout rebuilds the reindex copy over the new layout; the copy's guard (it
    skips the points it would read outside T4) must hold at each point's old index, while the
    padding is still written."""
    a0 = te.placeholder((3,), "float32", name="A0")
    a1 = te.placeholder((3,), "float32", name="A1")
    t2 = te.compute((3,), lambda i: a0[i] + a1[i], name="T2")
    r = te.reduce_axis((0, 3), name="r")
    t3 = te.compute((1,), lambda i: te.sum(t2[i + r], axis=r), name="T3")
    t4 = topi.nn.pad(t3, [1], [1], pad_value=0.0, name="T4")
    t5 = topi.nn.pad(t4, [2], [2], pad_value=0.0, name="T5")
    func = te.create_prim_func([a0, a1, t5])

    def steps(sch):
        block = sch.get_block("T5")
        sch.reindex(block, ("read", 0))
        sch.transform_layout(block, ("read", 0), lambda i: (i // 3, i % 3), pad_value=0.0)

    check_schedule(func, steps)


def test_cache_read_of_a_guarded_reindex_copy_skips_what_it_leaves_unwritten():  # old seed 0, 1147
    """The reindex copy writes only the points its T.where admits; a cache of its buffer must
    copy those alone instead of reading the two nothing wrote."""
    a0 = te.placeholder((1, 4), "float32", name="A0")
    r = te.reduce_axis((0, 1), name="r")
    t1 = te.compute((4,), lambda i: te.sum(a0[r, i], axis=r), name="T1")
    t4 = topi.nn.pad(t1, [1], [1], pad_value=0.0, name="T4")
    func = te.create_prim_func([a0, t4])

    def steps(sch):
        block = sch.get_block("T4")
        sch.reindex(block, ("read", 0))
        sch.cache_read(block, 0, "shared")

    sch = check_schedule(func, steps)
    copy = sch.func.script().split('T.block("T1_reindex_shared")')[1].split("T.block")[0]
    assert "T.where" in copy


def test_reverse_compute_at_refuses_a_reduction_split_across_parallel_iterations():
    """Seed 0, case 672 (under ASan, where the timing showed it): the sum over the rows of T2
    moved under T2's parallel row loop would have every thread update T3[0] at once."""

    @T.prim_func
    def rows(A: T.Buffer((2, 1), "float32"), C: T.Buffer((1,), "float32")):
        B = T.alloc_buffer((2, 1), "float32")
        for i, j in T.grid(2, 1):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j, r in T.grid(1, 2):
            with T.block("C"):
                vj, vr = T.axis.remap("SR", [j, r])
                with T.init():
                    C[vj] = T.float32(0)
                C[vj] = C[vj] + B[vr, vj]

    sch = Schedule(rows)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    before = sch.func
    with pytest.raises(ScheduleError, match=r"reverse_compute_at\.parallel-race"):
        sch.reverse_compute_at(sch.get_block("C"), i)
    assert sch.func is before
