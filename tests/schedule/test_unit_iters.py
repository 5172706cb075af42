"""Unit loops in bindings as TVM treats them: fuse binds a unit loop's iterator to 0 and
simplifies each digit over the fused range; split and fuse take TVM's `preserve_unit_iters`,
which (when False) takes the unit loops out of the bindings under the new loops."""

import pytest

from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def row_16(A: T.Buffer((1, 16), "float32"), B: T.Buffer((1, 16), "float32")):
    for i, j in T.grid(1, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_fuse_binds_a_unit_loop_to_zero_and_the_other_to_the_fused_loop():
    @T.prim_func
    def expected(A: T.Buffer((1, 16), "float32"), B: T.Buffer((1, 16), "float32")):
        for i_j_fused in range(16):
            with T.block("B"):
                vi = T.axis.spatial(1, 0)
                vj = T.axis.spatial(16, i_j_fused)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    check_schedule(row_16, lambda sch: sch.fuse(*sch.get_loops("B")), expected)


@pytest.mark.parametrize("preserve_unit_iters", [True, False])
def test_split_keeps_or_drops_unit_loops_in_the_bindings(preserve_unit_iters):
    @T.prim_func
    def preserved(A: T.Buffer((1, 16), "float32"), B: T.Buffer((1, 16), "float32")):
        for i, j_0, j_1 in T.grid(1, 1, 16):
            with T.block("B"):
                vi = T.axis.spatial(1, i)
                vj = T.axis.spatial(16, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def dropped(A: T.Buffer((1, 16), "float32"), B: T.Buffer((1, 16), "float32")):
        for i, j_0, j_1 in T.grid(1, 1, 16):
            with T.block("B"):
                vi = T.axis.spatial(1, 0)
                vj = T.axis.spatial(16, j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)

    def steps(sch):
        _, j = sch.get_loops("B")
        sch.split(j, [1, 16], preserve_unit_iters=preserve_unit_iters)

    check_schedule(row_16, steps, preserved if preserve_unit_iters else dropped)


@T.prim_func
def unit_then_grid(A: T.Buffer((1, 4, 6), "float32"), B: T.Buffer((1, 4, 6), "float32")):
    for k, i, j in T.grid(1, 4, 6):
        with T.block("B"):
            vk, vi, vj = T.axis.remap("SSS", [k, i, j])
            B[vk, vi, vj] = A[vk, vi, vj] + T.float32(1)


def test_fuse_without_preserve_unit_iters_drops_an_outer_unit_loop_too():
    @T.prim_func
    def expected(A: T.Buffer((1, 4, 6), "float32"), B: T.Buffer((1, 4, 6), "float32")):
        for k, i_j_fused in T.grid(1, 24):
            with T.block("B"):
                vk = T.axis.spatial(1, 0)
                vi = T.axis.spatial(4, i_j_fused // 6)
                vj = T.axis.spatial(6, i_j_fused % 6)
                B[vk, vi, vj] = A[vk, vi, vj] + T.float32(1)

    def steps(sch):
        _, i, j = sch.get_loops("B")
        sch.fuse(i, j, preserve_unit_iters=False)

    sch = check_schedule(unit_then_grid, steps, expected)
    assert "preserve_unit_iters=False" in str(sch.trace)
