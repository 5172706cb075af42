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
                vj_o = T.axis.spatial(1, 0)
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


def test_blockize_a_reduction_moves_its_init_to_the_outer_block():
    """As TVM: the outer block gets a unit reduction iterator and an init block; the inner block
    keeps the update only."""

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C_o"):
                vi = T.axis.spatial(16, i)
                vk_o = T.axis.reduce(1, 0)
                with T.init():
                    with T.block("C_init"):
                        C[vi] = T.float32(0)
                for k in range(8):
                    with T.block("C"):
                        vk = T.axis.reduce(8, k)
                        C[vi] = C[vi] + A[vi, vk]

    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        sch.blockize(k)

    check_schedule(row_sum, steps, expected)


def test_blockize_a_whole_reduction_nest_puts_the_spatial_loops_around_its_init():
    """TVM's documented form for blockizing a row sum at its outer loop."""

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        with T.block("C_o"):
            vi_o = T.axis.spatial(1, 0)
            vk_o = T.axis.reduce(1, 0)
            with T.init():
                for i in range(16):
                    with T.block("C_init"):
                        vi_init = T.axis.spatial(16, i)
                        C[vi_init] = T.float32(0)
            for i, k in T.grid(16, 8):
                with T.block("C"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + A[vi, vk]

    def steps(sch):
        i, _ = sch.get_loops(sch.get_block("C"))
        sch.blockize(i)

    check_schedule(row_sum, steps, expected)


def test_blockize_with_reduction_loops_outside_inits_at_the_first_outer_step():
    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        for i, k_0 in T.grid(16, 2):
            with T.block("C_o"):
                vi, vk_o = T.axis.remap("SR", [i, k_0])
                with T.init():
                    with T.block("C_init"):
                        C[vi] = T.float32(0)
                for k_1 in range(4):
                    with T.block("C"):
                        vk_i = T.axis.reduce(4, k_1)
                        C[vi] = C[vi] + A[vi, vk_o * 4 + vk_i]

    def steps(sch):
        _, k = sch.get_loops(sch.get_block("C"))
        _, k1 = sch.split(k, [None, 4])
        sch.blockize(k1)

    check_schedule(row_sum, steps, expected)


def test_blockize_refuses_an_init_whose_predicate_ties_reduction_to_spatial_loops():
    sch = Schedule(row_sum)
    i, k = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(i, k)
    _, inner = sch.split(fused, [None, 24])  # 128 = 5 * 24 + 8: `fused_0 * 24 + fused_1 < 128`
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.blockize(inner)
    assert err.value.rule in {"blockize.reduction-init", "blockize.subspace-divide"}
    assert sch.func is before


def test_blockize_keeps_a_unit_outer_iterator_and_drops_a_unit_inner_one():
    """TVM's test_blockize_inner: the outer block iterates `vjo = T.axis.spatial(1, 0)`."""

    @T.prim_func
    def expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for i in range(16):
            with T.block("B_o"):
                vi = T.axis.spatial(16, i)
                vj_o = T.axis.spatial(1, 0)
                for j in range(8):
                    with T.block("B"):
                        vj = T.axis.spatial(8, j)
                        B[vi, vj] = A[vi, vj] * T.float32(2)

    check_schedule(scale, lambda sch: sch.blockize(sch.get_loops(sch.get_block("B"))[1]), expected)


@T.prim_func
def unit_outer(A: T.Buffer((16, 128), "float32"), B: T.Buffer((16, 128), "float32")):
    for i0, j0, i1, j1 in T.grid(1, 8, 16, 16):
        with T.block("B"):
            vi = T.axis.spatial(16, i0 * 16 + i1)
            vj = T.axis.spatial(128, j0 * 16 + j1)
            B[vi, vj] = A[vi, vj] + T.float32(1)


@pytest.mark.parametrize("preserve_unit_iters", [True, False])
def test_blockize_binds_a_unit_loop_or_zero_as_preserve_unit_iters_says(preserve_unit_iters):
    """TVM's test_blockize_outer_int64_shape, in int32."""

    @T.prim_func
    def preserved(A: T.Buffer((16, 128), "float32"), B: T.Buffer((16, 128), "float32")):
        for i0, j0 in T.grid(1, 8):
            with T.block("B_o"):
                vi_o = T.axis.spatial(1, i0)
                vj_o = T.axis.spatial(8, j0)
                for i1, j1 in T.grid(16, 16):
                    with T.block("B"):
                        vi_i, vj_i = T.axis.remap("SS", [i1, j1])
                        B[vi_i, vj_o * 16 + vj_i] = A[vi_i, vj_o * 16 + vj_i] + T.float32(1)

    @T.prim_func
    def simplified(A: T.Buffer((16, 128), "float32"), B: T.Buffer((16, 128), "float32")):
        for i0, j0 in T.grid(1, 8):
            with T.block("B_o"):
                vi_o = T.axis.spatial(1, 0)
                vj_o = T.axis.spatial(8, j0)
                for i1, j1 in T.grid(16, 16):
                    with T.block("B"):
                        vi_i, vj_i = T.axis.remap("SS", [i1, j1])
                        B[vi_i, vj_o * 16 + vj_i] = A[vi_i, vj_o * 16 + vj_i] + T.float32(1)

    def steps(sch):
        _, _, i1, _ = sch.get_loops(sch.get_block("B"))
        sch.blockize(i1, preserve_unit_iters=preserve_unit_iters)

    check_schedule(unit_outer, steps, preserved if preserve_unit_iters else simplified)


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
