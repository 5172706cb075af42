"""transform_layout with padding gives what TVM gives for the same step: the padding predicate as
TVM's simplifier writes it (`vi == 3 and 2 <= vj`), the inverse with scales descending
(`A[vi * 4 + vj]`), a guarded init even where it stores the pad value, and blocks given by
name. The Expected functions follow TVM's documented outputs for these steps."""

import pytest

from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_layout_schedule
from tessel.testing.schedules import named_like
from tessel.tir.index_map import IndexMap


@T.prim_func
def copy_14(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
    B = T.alloc_buffer((14,), "int32")
    for i in range(14):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi]


def test_padded_producer_is_an_if_then_else_over_the_new_shape():
    @T.prim_func
    def expected(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
        B = T.alloc_buffer((4, 4), "int32")
        for i, j in T.grid(4, 4):
            with T.block("block"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(vi == 3 and 2 <= vj, 0, A[vi * 4 + vj])
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        copy_14,
        lambda sch: sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0),
        expected,
    )


def test_pad_value_of_the_new_indices_is_the_else_of_nothing_but_the_padding():
    @T.prim_func
    def expected(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
        B = T.alloc_buffer((4, 4), "int32")
        for i, j in T.grid(4, 4):
            with T.block("block"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(vi == 3 and 2 <= vj, vi + vj, A[vi * 4 + vj])
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        copy_14,
        lambda sch: sch.transform_layout(
            "block", "B", lambda i: [i // 4, i % 4], pad_value=lambda i, j: i + j
        ),
        expected,
    )


def test_padded_reduction_guards_its_init_and_its_update():
    @T.prim_func
    def rowsum(A: T.Buffer((14, 32), "int32"), C: T.Buffer((14,), "int32")):
        B = T.alloc_buffer((14,), "int32")
        for i, k in T.grid(14, 32):
            with T.block("block"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = 0
                B[vi] = B[vi] + A[vi, vk]
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi]

    @T.prim_func
    def expected(A: T.Buffer((14, 32), "int32"), C: T.Buffer((14,), "int32")):
        B = T.alloc_buffer((4, 4), "int32")
        for i, j, k in T.grid(4, 4, 32):
            with T.block("block"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    B[vi, vj] = T.if_then_else(vi == 3 and 2 <= vj, 0, 0)
                B[vi, vj] = T.if_then_else(vi == 3 and 2 <= vj, 0, B[vi, vj] + A[vi * 4 + vj, vk])
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        rowsum,
        lambda sch: sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0),
        expected,
    )


def test_padded_input_gets_an_assumption_in_tvm_form():
    @T.prim_func
    def expected(A: T.Buffer((4, 4), "int32"), C: T.Buffer((14,), "int32")):
        B = T.alloc_buffer((14,), "int32")
        for i, j in T.grid(4, 4):
            with T.block("buffer_A_assumption"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.evaluate(T.assume(not (vi == 3 and 2 <= vj) or A[vi, vj] == 42))
        for i in range(14):
            with T.block("block"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi // 4, vi % 4]
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi]

    check_layout_schedule(
        copy_14,
        lambda sch: sch.transform_layout("block", "A", lambda i: [i // 4, i % 4], pad_value=42),
        expected,
    )


def test_producer_with_another_effect_gets_a_padding_block_with_a_where():
    @T.prim_func
    def two_effects(
        A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32"), D: T.Buffer((14,), "int32")
    ):
        B = T.alloc_buffer((14,), "int32")
        for i in range(14):
            with T.block("block"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]
                C[vi] = 0
        for i in range(14):
            with T.block("D"):
                vi = T.axis.remap("S", [i])
                D[vi] = B[vi]

    @T.prim_func
    def expected(
        A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32"), D: T.Buffer((14,), "int32")
    ):
        B = T.alloc_buffer((4, 4), "int32")
        for i in range(14):
            with T.block("block"):
                vi = T.axis.remap("S", [i])
                B[vi // 4, vi % 4] = A[vi]
                C[vi] = 0
        for i, j in T.grid(4, 4):
            with T.block("buffer_B_padding"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.where(i == 3 and 2 <= j)
                B[vi, vj] = 0
        for i in range(14):
            with T.block("D"):
                vi = T.axis.remap("S", [i])
                D[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        two_effects,
        lambda sch: sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0),
        expected,
    )


def test_padded_write_outside_any_loop_gets_a_padding_block():
    @T.prim_func
    def single(A: T.Buffer((14,), "int32")):
        with T.block("block"):
            A[0] = 0

    @T.prim_func
    def expected(A: T.Buffer((4, 4), "int32")):
        with T.block("block"):
            A[0, 0] = 0
        for i, j in T.grid(4, 4):
            with T.block("buffer_A_padding"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.where(i == 3 and 2 <= j)
                A[vi, vj] = 0

    sch = Schedule(single)
    sch.transform_layout("block", "A", lambda i: [i // 4, i % 4], pad_value=0)
    assert_structural_equal(sch.func, named_like(expected, sch.func))


def test_block_given_by_name_is_looked_up_by_a_recorded_get_block():
    sch = Schedule(copy_14)
    sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0)
    sch.get_loops("C")
    text = str(sch.trace)
    assert "b0 = sch.get_block('block')" in text and "sch.transform_layout(b0, 'B'" in text
    assert "b1 = sch.get_block('C')" in text and "sch.get_loops(b1)" in text
    by_handle = Schedule(copy_14)
    by_handle.transform_layout(
        by_handle.get_block("block"), "B", lambda i: [i // 4, i % 4], pad_value=0
    )
    assert_structural_equal(sch.func, by_handle.func)
    replayed = Schedule(copy_14)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)


def test_unknown_block_name_is_a_schedule_error_naming_the_blocks():
    sch = Schedule(copy_14)
    with pytest.raises(ScheduleError, match=r"no block `nope`; blocks: \['root', 'block', 'C'\]"):
        sch.get_loops("nope")


@T.prim_func
def fill_14(a: T.handle):
    A = T.match_buffer(a, [14], "int32")
    for i in range(14):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            A[vi] = 42


@T.prim_func
def fill_14_opaque(a: T.handle):
    A = T.match_buffer(a, [14], "int32")
    for i in range(14):
        with T.block("block"):
            A[i] = 42


def test_axis_separators_in_the_map_pad_the_output_as_tvm_does():
    @T.prim_func
    def expected(a: T.handle):
        A = T.match_buffer(a, [4, 4], "int32", axis_separators=[1])
        for i, j in T.grid(4, 4):
            with T.block("block"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.if_then_else(vi == 3 and 2 <= vj, 0, 42)

    check_layout_schedule(
        fill_14,
        lambda sch: sch.transform_layout(
            "block", "A", lambda i: [i // 4, IndexMap.AXIS_SEPARATOR, i % 4], pad_value=0
        ),
        expected,
    )


def test_an_opaque_producer_runs_its_loops_over_the_new_shape():
    """TVM's test_transform_with_axis_separators_opaque_block: no iterators, so the loops
    themselves take the new shape and the store reads them directly."""

    @T.prim_func
    def expected(a: T.handle):
        A = T.match_buffer(a, [4, 4], "int32", axis_separators=[1])
        for i, j in T.grid(4, 4):
            with T.block("block"):
                A[i, j] = T.if_then_else(i == 3 and 2 <= j, 0, 42)

    check_layout_schedule(
        fill_14_opaque,
        lambda sch: sch.transform_layout(
            "block", "A", lambda i: [i // 4, IndexMap.AXIS_SEPARATOR, i % 4], pad_value=0
        ),
        expected,
    )


def test_an_opaque_copy_reads_its_input_at_the_inverse_of_the_new_loops():
    @T.prim_func
    def copy_opaque(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
        B = T.alloc_buffer((14,), "float32")
        for i in range(14):
            with T.block("block"):
                B[i] = A[i] * T.float32(2)
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi]

    @T.prim_func
    def expected(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
        B = T.alloc_buffer((4, 4), "float32")
        for i, j in T.grid(4, 4):
            with T.block("block"):
                B[i, j] = T.if_then_else(
                    i == 3 and 2 <= j, T.float32(0), A[i * 4 + j] * T.float32(2)
                )
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        copy_opaque,
        lambda sch: sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0.0),
        expected,
    )


def test_an_int64_buffer_is_relaid_out_with_int64_indices():
    """TVM's test_transform_layout_with_cache_write_and_axis_separators: the map, written with
    Python ints, is traced over the buffer's int64 indices."""

    @T.prim_func
    def add(
        p0: T.Buffer((T.int64(33), T.int64(128)), "float32"),
        p1: T.Buffer((T.int64(33), T.int64(128)), "float32"),
        T_add: T.Buffer((T.int64(33), T.int64(128)), "float32"),
    ):
        T.func_attr({"tir.noalias": True})
        for ax0, ax1 in T.grid(T.int64(33), T.int64(128)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T_add[v_ax0, v_ax1] = p0[v_ax0, v_ax1] + p1[v_ax0, v_ax1]

    @T.prim_func
    def expected(
        p0: T.Buffer((T.int64(33), T.int64(128)), "float32"),
        p1: T.Buffer((T.int64(33), T.int64(128)), "float32"),
        T_add: T.Buffer((T.int64(33), T.int64(128)), "float32"),
    ):
        T.func_attr({"tir.noalias": True})
        T_add_global = T.alloc_buffer((T.int64(2), T.int64(128), T.int64(32)), axis_separators=[2])
        for axis0, axis1, axis2 in T.grid(T.int64(2), T.int64(128), T.int64(32)):
            with T.block("T_add"):
                v0, v1, v2 = T.axis.remap("SSS", [axis0, axis1, axis2])
                T_add_global[v0, v1, v2] = T.if_then_else(
                    v0 == T.int64(1) and T.int64(1) <= v2,
                    T.float32(0),
                    p0[v0 * T.int64(32) + v2, v1] + p1[v0 * T.int64(32) + v2, v1],
                )
        for ax0, ax1 in T.grid(T.int64(33), T.int64(128)):
            with T.block("T_add_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                T_add[v0, v1] = T_add_global[v0 // T.int64(32), v1, v0 % T.int64(32)]

    def steps(sch):
        block = sch.get_block("T_add")
        sch.cache_write(block, 0, "global")
        sch.transform_layout(
            block,
            ("write", 0),
            lambda x, y: [x // 32, y, IndexMap.AXIS_SEPARATOR, x % 32],
            pad_value=0.0,
        )

    check_layout_schedule(add, steps, expected)


def test_an_int64_block_is_fused_by_a_map_of_python_ints():
    """TVM's test_transform_block_layout_int64_extent."""

    @T.prim_func
    def scale(
        A: T.Buffer((T.int64(128), T.int64(128)), "float32"),
        B: T.Buffer((T.int64(128), T.int64(128)), "float32"),
    ):
        for i, j in T.grid(T.int64(128), T.int64(128)):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def expected(
        A: T.Buffer((T.int64(128), T.int64(128)), "float32"),
        B: T.Buffer((T.int64(128), T.int64(128)), "float32"),
    ):
        for i in range(T.int64(16384)):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi // T.int64(128), vi % T.int64(128)] = A[
                    vi // T.int64(128), vi % T.int64(128)
                ] * T.float32(2)

    check_layout_schedule(
        scale, lambda sch: sch.transform_block_layout("B", lambda i, j: (i * 128 + j,)), expected
    )


def test_an_int32_index_map_applies_to_an_int64_buffer():
    sch_map = IndexMap.from_func(lambda i: (i // 4, i % 4))
    retyped = sch_map.with_index_dtype("int64")
    assert [str(v.dtype) for v in retyped.initial_indices] == ["int64"]
    assert retyped.with_index_dtype("int64") is retyped
    assert "T.int64(4)" in str(retyped) or 'index_dtype="int64"' in repr(retyped)
