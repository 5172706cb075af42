"""blockize: the loops under a loop, with their block, become an outer block (subspace division)."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def scale(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_blockize_the_inner_part_of_a_split_loop():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for i_0 in range(4):
            with T.block("B_o"):
                vi_o = T.axis.spatial(4, i_0)
                for i_1, j in T.grid(4, 8):
                    with T.block("B"):
                        vi_i, vj = T.axis.remap("SS", [i_1, j])
                        B[vi_o * 4 + vi_i, vj] = A[vi_o * 4 + vi_i, vj] * T.float32(2)

    def steps(sch):
        i, _ = sch.get_loops(sch.get_block("B"))
        _, i1 = sch.split(i, [None, 4])
        outer = sch.blockize(i1)
        assert outer.name == "B_o"

    check_schedule(scale, steps, expected)


@T.prim_func
def row_sum(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 8):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]


def test_blockize_a_whole_reduction_keeps_the_init_inside():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C_o"):
                vi = T.axis.spatial(16, i)
                for k in range(8):
                    with T.block("C"):
                        vk = T.axis.reduce(8, k)
                        with T.init():
                            C[vi] = T.float32(0)
                        C[vi] = C[vi] + A[vi, vk]

    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        sch.blockize(k)

    check_schedule(row_sum, steps, expected)


def test_blockize_refuses_an_init_with_reduction_loops_outside():
    sch = Schedule(row_sum)
    _, k = sch.get_loops(sch.get_block("C"))
    _, k1 = sch.split(k, [None, 4])
    before = sch.func
    with pytest.raises(ScheduleError, match="decompose_reduction") as err:
        sch.blockize(k1)
    assert err.value.rule == "blockize.reduction-init"
    assert sch.func is before


def test_blockize_refuses_a_binding_that_does_not_divide():
    @T.prim_func
    def fused(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i, j in T.grid(16, 8):
            with T.block("B"):
                v = T.axis.spatial(128, j * 16 + i)
                B[v] = A[v] * T.float32(2)

    sch = Schedule(fused)
    _, j = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.blockize(j)
    assert err.value.rule == "blockize.subspace-divide"
    assert_structural_equal(sch.func, fused)
