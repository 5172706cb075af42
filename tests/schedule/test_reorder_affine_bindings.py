"""reorder follows TVM's affine-binding rule: a binding that steps by more than one (`l * 16`) is
refused, unchanged; a binding that is affine in the reordered loops, with the loops above them
held fixed, is accepted even when it is not affine in those outer loops."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def strided(A: T.Buffer((4, 4, 32), "float32"), B: T.Buffer((4, 4, 32), "float32")):
    for i, j, l in T.grid(4, 4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            vl = T.axis.spatial(32, l * 4)
            B[vi, vj, vl] = A[vi, vj, vl] * T.float32(2)


@T.prim_func
def squared_outer(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    for v0, v1, v2 in T.grid(3, 4, 4):
        with T.block("block"):
            i = T.axis.spatial(8, v0 * v0 + v1)
            j = T.axis.spatial(4, v2)
            B[i, j] = A[i, j] + T.float32(1)


def test_reorder_refuses_a_binding_that_steps_by_more_than_one():
    sch = Schedule(strided)
    i, _, l = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.reorder(l, i)
    assert err.value.rule == "reorder.affine-binding"
    assert "vl" in str(err.value)
    assert_structural_equal(sch.func, strided)


def test_reorder_refuses_a_binding_not_affine_in_the_reordered_loops():
    sch = Schedule(squared_outer)
    v0, v1, v2 = sch.get_loops(sch.get_block("block"))
    with pytest.raises(ScheduleError) as err:
        sch.reorder(v0, v2, v1)
    assert err.value.rule == "reorder.affine-binding"
    assert_structural_equal(sch.func, squared_outer)


def test_reorder_holds_the_loops_above_the_nest_fixed():
    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for v0, v2, v1 in T.grid(3, 4, 4):
            with T.block("block"):
                i = T.axis.spatial(8, v0 * v0 + v1)
                j = T.axis.spatial(4, v2)
                B[i, j] = A[i, j] + T.float32(1)

    def steps(sch):
        _, v1, v2 = sch.get_loops(sch.get_block("block"))
        sch.reorder(v2, v1)

    check_schedule(squared_outer, steps, expected)
