"""transform_layout: accesses, regions and declarations in the new layout; padding of inputs
(buffer constraints), outputs (extended producers) and other buffers (a padding block); errors."""

import pytest

from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_layout_schedule, check_schedule


@T.prim_func
def two_stage(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8), "float32")
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def add_one_14(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] + T.float32(1)


def test_intermediate_buffer_is_transposed_in_every_access_and_region():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
        B = T.alloc_buffer((8, 16), "float32")
        for i, j in T.grid(16, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vj, vi])
                B[vj, vi] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(16, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(B[vj, vi])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vj, vi] + T.float32(1)

    def steps(sch):
        sch.transform_layout(sch.get_block("B"), ("write", 0), lambda i, j: (j, i))

    check_schedule(two_stage, steps, expected)


def test_buffer_given_by_read_index_name_or_object_is_the_same_buffer():
    funcs = []
    for spec in (("read", 0), "B", two_stage.body.block.alloc_buffers[0]):
        sch = Schedule(two_stage)
        sch.transform_layout(sch.get_block("C"), spec, lambda i, j: (j, i))
        funcs.append(sch.func)
    from tessel.ir.structural import assert_structural_equal

    assert_structural_equal(funcs[0], funcs[1])
    assert_structural_equal(funcs[0], funcs[2])


def test_parameter_layout_changes_the_signature_and_records_the_steps():
    def steps(sch):
        sch.transform_layout(sch.get_block("C"), "A", lambda i, j: (j // 4, i, j % 4))

    sch = check_layout_schedule(two_stage, steps)
    a = sch.func.buffer_map[sch.func.params[0]]
    assert [int(e.value) for e in a.shape] == [2, 16, 4]
    record = sch.layout_records()["A"]
    assert record.new_shape == (2, 16, 4)


def test_padded_input_gets_a_buffer_constraint_block():
    @T.prim_func
    def expected(A: T.Buffer((4, 4), "float32"), B: T.Buffer((14,), "float32")):
        for ax0, ax1 in T.grid(4, 4):
            with T.block("buffer_A_assumption"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[v_ax0, v_ax1])
                T.writes()
                T.evaluate(
                    T.assume(not (v_ax0 == 3 and 2 <= v_ax1) or A[v_ax0, v_ax1] == T.float32(0))
                )
        for i in range(14):
            with T.block("B"):
                vi = T.axis.spatial(14, i)
                T.reads(A[vi // 4, vi % 4])
                T.writes(B[vi])
                B[vi] = A[vi // 4, vi % 4] + T.float32(1)

    def steps(sch):
        sch.transform_layout(sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=0.0)

    check_layout_schedule(add_one_14, steps, expected)


def test_padded_output_extends_its_producer_over_the_padding():
    @T.prim_func
    def expected(A: T.Buffer((14,), "float32"), B: T.Buffer((4, 4), "float32")):
        for ax0, ax1 in T.grid(4, 4):
            with T.block("B"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[v_ax0 * 4 + v_ax1])
                T.writes(B[v_ax0, v_ax1])
                B[v_ax0, v_ax1] = T.if_then_else(
                    v_ax0 == 3 and 2 <= v_ax1, T.float32(-1), A[v_ax0 * 4 + v_ax1] + T.float32(1)
                )

    def steps(sch):
        sch.transform_layout(sch.get_block("B"), "B", lambda i: (i // 4, i % 4), pad_value=-1.0)

    sch = check_layout_schedule(add_one_14, steps, expected)
    assert sch.layout_records()["B"].new_shape == (4, 4)


def test_producer_with_other_effects_gets_a_separate_padding_block():
    @T.prim_func
    def two_outputs(
        A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")
    ):
        for i in range(14):
            with T.block("BC"):
                vi = T.axis.spatial(14, i)
                B[vi] = A[vi] + T.float32(1)
                C[vi] = A[vi] * T.float32(2)

    def steps(sch):
        sch.transform_layout(sch.get_block("BC"), "B", lambda i: (i // 4, i % 4), pad_value=0.0)

    sch = check_layout_schedule(two_outputs, steps)
    assert "buffer_B_padding" in sch.func.script()
    assert "T.where" in sch.func.script()


def test_pad_value_may_be_a_function_of_the_new_indices():
    def steps(sch):
        sch.transform_layout(
            sch.get_block("B"),
            "B",
            lambda i: (i // 4, i % 4),
            pad_value=lambda a, b: T.Cast("float32", a * 4 + b),
        )

    sch = check_layout_schedule(add_one_14, steps)
    assert "T.Cast" in sch.func.script()


def test_pad_value_may_read_the_same_buffer_circularly():
    @T.prim_func
    def copy(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
        for i in range(14):
            with T.block("B"):
                vi = T.axis.spatial(14, i)
                B[vi] = A[vi]

    def steps(sch):
        block = sch.get_block("B")
        sch.transform_layout(
            block,
            "B",
            lambda i: (i // 4, i % 4),
            pad_value=lambda a, b: sch.func.buffer_map[sch.func.params[1]][a * 4 + b - 14],
        )

    # The padding of B (elements 14, 15) repeats B[0], B[1]: a separate block after the producer.
    sch = Schedule(copy)
    steps(sch)
    assert "buffer_B_padding" in sch.func.script()


def test_undef_padding_with_assume_injective_transform_adds_nothing():
    def steps(sch):
        sch.transform_layout(
            sch.get_block("B"), "A", lambda i: (i // 4, i % 4), assume_injective_transform=True
        )

    sch = Schedule(add_one_14)
    steps(sch)
    assert "assume" not in sch.func.script()


# -- errors ------------------------------------------------------------------------------------


def _refused(func, steps, rule):
    sch = Schedule(func)
    before = sch.func
    with pytest.raises(ScheduleError) as info:
        steps(sch)
    assert info.value.rule == f"transform_layout.{rule}" or info.value.rule == rule
    assert sch.func is before
    return info.value


def test_padding_without_pad_value_is_refused():
    err = _refused(
        add_one_14,
        lambda sch: sch.transform_layout(sch.get_block("B"), "A", lambda i: (i // 4, i % 4)),
        "padding-needs-pad-value",
    )
    assert "pad_value" in str(err)


def test_pad_value_of_the_wrong_dtype_is_refused():
    _refused(
        add_one_14,
        lambda sch: sch.transform_layout(
            sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=T.int32(0)
        ),
        "pad-value-dtype",
    )


def test_pad_value_reading_another_buffer_is_refused():
    def steps(sch):
        other = sch.func.buffer_map[sch.func.params[1]]
        sch.transform_layout(
            sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=lambda a, b: other[a]
        )

    _refused(add_one_14, steps, "pad-value-reads-other-buffer")


def test_non_injective_map_is_refused():
    _refused(
        two_stage,
        lambda sch: sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (i // 2, j)),
        "not-injective",
    )


def test_unknown_buffer_is_refused():
    _refused(
        two_stage,
        lambda sch: sch.transform_layout(sch.get_block("B"), "Z", lambda i, j: (j, i)),
        "unknown-buffer",
    )


def test_padded_intermediate_is_computed_on_the_padding_and_read_only_where_valid():
    def steps(sch):
        sch.transform_layout(
            sch.get_block("B"), "B", lambda i, j: (i, j // 3, j % 3), pad_value=0.0
        )

    sch = check_layout_schedule(two_stage, steps)
    b = sch.func.body.block.alloc_buffers[0]
    assert [int(e.value) for e in b.shape] == [16, 3, 3]
    assert sch.layout_records() == {}


def test_the_printed_trace_runs_and_rebuilds_the_same_function():
    from tessel.ir.structural import assert_structural_equal
    from tessel.tir.index_map import IndexMap

    sch = Schedule(add_one_14)
    sch.transform_layout(sch.get_block("B"), "B", lambda i: (i // 4, i % 4), pad_value=-1.0)
    sch.transform_layout(sch.get_block("B"), "A", lambda i: (i // 4, i % 4), pad_value=0.0)
    fresh = Schedule(add_one_14)
    exec(str(sch.trace), {"sch": fresh, "IndexMap": IndexMap, "T": T})
    assert_structural_equal(fresh.func, sch.func)
