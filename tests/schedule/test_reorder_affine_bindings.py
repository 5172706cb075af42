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


@T.prim_func
def halo(A: T.Buffer((16, 8), "float32"), C: T.Buffer((15,), "float32")):
    B = T.alloc_buffer((16,))
    for i, k in T.grid(16, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(15):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + B[vi + 1]


def test_a_reduction_computed_at_a_loop_with_a_halo_may_move_its_reduction_outward():
    """compute_at leaves B's rows overlapping across the outer loop (each block of 5 rows of C
    reads 6 of B): not one-to-one over all loops, but one-to-one with the outer loop fixed, so
    the reduction loop may cross the row loop (the conv-chain rule's reorder)."""

    def steps(sch):
        outer, _ = sch.split(sch.get_loops(sch.get_block("C"))[0], [None, 5])
        sch.compute_at(sch.get_block("B"), outer)
        rows, k = sch.get_loops(sch.get_block("B"))[1:]
        sch.reorder(k, rows)

    sch = check_schedule(halo, steps)
    names = [sch.loop(loop).loop_var.name for loop in sch.get_loops(sch.get_block("B"))]
    assert names[1:] == ["ax1", "ax0"]  # the reduction (ax1) outside B's rows (ax0)
