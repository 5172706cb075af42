"""decompose_reduction, rfactor and add_unit_loop: Before/Expected, runs, replays, refusals."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def matmul(
    A: T.Buffer((16, 8), "float32"),
    B: T.Buffer((8, 12), "float32"),
    C: T.Buffer((16, 12), "float32"),
):
    for i, j, k in T.grid(16, 12, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_decompose_reduction_at_the_inner_spatial_loop():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        for i in range(16):
            for j_init in range(12):
                with T.block("C_init"):
                    vi_init, vj_init = T.axis.remap("SS", [i, j_init])
                    C[vi_init, vj_init] = T.float32(0)
            for j, k in T.grid(12, 8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    def steps(sch):
        block = sch.get_block("C")
        _, j, _ = sch.get_loops(block)
        init = sch.decompose_reduction(block, j)
        assert init.name == "C_init"

    check_schedule(matmul, steps, expected)


def test_decompose_reduction_refuses_a_loop_inside_the_reduction_loop():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.reorder(k, i, j)
    before = sch.func
    with pytest.raises(ScheduleError, match="reduction iterator") as err:
        sch.decompose_reduction(block, i)
    assert err.value.rule == "decompose_reduction.loop-height"
    assert_structural_equal(sch.func, before)
    assert sch.func is before


@T.prim_func
def row_sum(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 8):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]


def test_rfactor_of_the_inner_part_of_a_split_reduction_loop():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        C_rf = T.alloc_buffer((16, 4))
        for i, k_0, k_1 in T.grid(16, 2, 4):
            with T.block("C_rf"):
                vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                with T.init():
                    C_rf[vi, vk_1] = T.float32(0)
                C_rf[vi, vk_1] = C_rf[vi, vk_1] + A[vi, vk_0 * 4 + vk_1]
        for i, k_1 in T.grid(16, 4):
            with T.block("C"):
                vk_1, vi = T.axis.remap("RS", [k_1, i])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + C_rf[vi, vk_1]

    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        _, k1 = sch.split(k, [None, 4])
        rf = sch.rfactor(k1, factor_axis=1)
        assert rf.name == "C_rf"

    check_schedule(row_sum, steps, expected)


def test_rfactor_refuses_a_data_parallel_loop():
    sch = Schedule(row_sum)
    i, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="data-parallel") as err:
        sch.rfactor(i, 0)
    assert err.value.rule == "rfactor.not-reduction-loop"
    assert_structural_equal(sch.func, row_sum)


def test_add_unit_loop_around_a_block_and_around_a_loop():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        for _u in range(1):
            for i, k in T.grid(16, 8):
                for _u_1 in range(1):
                    with T.block("C"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        with T.init():
                            C[vi] = T.float32(0)
                        C[vi] = C[vi] + A[vi, vk]

    def steps(sch):
        block = sch.get_block("C")
        sch.add_unit_loop(block)
        i, _, _ = sch.get_loops(block)
        unit = sch.add_unit_loop(i)
        assert sch.loop(unit).extent.value == 1

    check_schedule(row_sum, steps, expected)


def test_add_unit_loop_refuses_the_root_block():
    sch = Schedule(row_sum)
    with pytest.raises(ScheduleError) as err:
        sch.add_unit_loop(sch.get_block("root"))
    assert err.value.rule == "add_unit_loop.root-block"
    assert_structural_equal(sch.func, row_sum)
