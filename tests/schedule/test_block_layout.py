"""transform_block_layout (remapping a block's iteration space) and set_axis_separator."""

import pytest

from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def add_one(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def row_sum(A: T.Buffer((16, 8), "float32"), S: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 8):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]


def test_block_iteration_space_is_fused_and_split_by_a_bijection():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for ax0, ax1 in T.grid(32, 4):
            with T.block("B"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(A[v_ax0 // 2, v_ax0 % 2 * 4 + v_ax1])
                T.writes(B[v_ax0 // 2, v_ax0 % 2 * 4 + v_ax1])
                B[v_ax0 // 2, v_ax0 % 2 * 4 + v_ax1] = A[
                    v_ax0 // 2, v_ax0 % 2 * 4 + v_ax1
                ] + T.float32(1)

    def steps(sch):
        sch.transform_block_layout(sch.get_block("B"), lambda i, j: (i * 2 + j // 4, j % 4))

    check_schedule(add_one, steps, expected)


def test_block_iterators_keep_their_kind():
    def steps(sch):
        sch.transform_block_layout(sch.get_block("S"), lambda i, k: (k, i))

    sch = check_schedule(row_sum, steps)
    kinds = [iv.iter_type.value for iv in sch.block(sch.get_block("S")).block.iter_vars]
    assert kinds == ["R", "S"]


def test_mixing_spatial_and_reduction_iterators_is_refused():
    sch = Schedule(row_sum)
    before = sch.func
    with pytest.raises(ScheduleError) as info:
        sch.transform_block_layout(sch.get_block("S"), lambda i, k: (i * 8 + k,))
    assert info.value.rule == "transform_block_layout.mixed-iter-types"
    assert sch.func is before


def test_non_bijective_block_map_is_refused():
    sch = Schedule(add_one)
    with pytest.raises(ScheduleError) as info:
        sch.transform_block_layout(sch.get_block("B"), lambda i, j: (i // 2, j))
    assert info.value.rule == "transform_block_layout.not-bijective"


def test_axis_separator_is_set_on_the_buffer_and_via_an_index_map():
    from tessel.tir.index_map import IndexMap

    sch = Schedule(add_one)
    sch.set_axis_separator(sch.get_block("B"), "B", [1])
    assert sch.func.buffer_map[sch.func.params[1]].axis_separators == (1,)
    sch = Schedule(add_one)
    sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (i, IndexMap.AXIS_SEPARATOR, j))
    assert sch.func.buffer_map[sch.func.params[1]].axis_separators == (1,)
    with pytest.raises(ScheduleError) as info:
        sch.set_axis_separator(sch.get_block("B"), "B", [2])
    assert info.value.rule == "set_axis_separator.separators"
