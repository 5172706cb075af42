"""fuse, reorder, parallel/vectorize/unroll/bind and annotate: Before/Expected, runs, replays."""

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


def _loops(sch):
    return sch.get_loops(sch.get_block("C"))


def test_fuse_two_loops():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        for i_j_fused, k in T.grid(192, 8):
            with T.block("C"):
                vi = T.axis.spatial(16, i_j_fused // 12)
                vj = T.axis.spatial(12, i_j_fused % 12)
                vk = T.axis.reduce(8, k)
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    def steps(sch):
        i, j, _ = _loops(sch)
        sch.fuse(i, j)

    check_schedule(matmul, steps, expected)


def test_fuse_refuses_loops_that_are_not_directly_nested():
    sch = Schedule(matmul)
    i, _, k = _loops(sch)
    with pytest.raises(ScheduleError, match="not directly nested") as err:
        sch.fuse(i, k)
    assert err.value.rule == "fuse.adjacent-nesting"
    assert_structural_equal(sch.func, matmul)


def test_reorder_moves_the_reduction_loop_outward():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        for k, i, j in T.grid(8, 16, 12):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    def steps(sch):
        i, j, k = _loops(sch)
        sch.reorder(k, i, j)

    check_schedule(matmul, steps, expected)


def test_split_then_reorder_tiles_the_matmul():
    def steps(sch):
        i, j, k = _loops(sch)
        i0, i1 = sch.split(i, factors=[None, 4])
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.reorder(i0, j0, k, i1, j1)
        sch.parallel(i0)
        sch.unroll(i1)
        sch.vectorize(j1)

    check_schedule(matmul, steps)


def test_reorder_refuses_a_repeated_loop():
    sch = Schedule(matmul)
    i, j, _ = _loops(sch)
    with pytest.raises(ScheduleError) as err:
        sch.reorder(i, i)
    assert err.value.rule == "reorder.duplicate"
    assert_structural_equal(sch.func, matmul)


def test_reorder_refuses_loops_of_different_nests():
    @T.prim_func
    def two_nests(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(1)
        for j in range(4):
            with T.block("B"):
                vj = T.axis.spatial(4, j)
                B[vj] = A[vj]

    sch = Schedule(two_nests)
    (i,) = sch.get_loops(sch.get_block("A"))
    (j,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.reorder(j, i)
    assert err.value.rule == "reorder.not-a-nest"


@pytest.mark.parametrize("primitive", ["parallel", "vectorize"])
def test_reduction_loop_cannot_run_in_parallel(primitive):
    sch = Schedule(matmul)
    _, _, k = _loops(sch)
    with pytest.raises(ScheduleError, match="reduction iterator `vk`") as err:
        getattr(sch, primitive)(k)
    assert err.value.rule == f"{primitive}.data-parallel"
    assert_structural_equal(sch.func, matmul)


def test_parallel_outer_loop_prints_and_runs():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        for i in T.parallel(16):
            for j, k in T.grid(12, 8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    check_schedule(matmul, lambda sch: sch.parallel(_loops(sch)[0]), expected)


def test_bind_sets_the_thread_axis():
    sch = Schedule(matmul)
    sch.bind(_loops(sch)[0], "blockIdx.x")
    assert 'T.thread_binding(16, thread="blockIdx.x")' in str(sch.func)


def test_annotations_of_any_value_on_loops_and_blocks_and_their_removal():
    def steps(sch):
        i, _, _ = _loops(sch)
        sch.annotate(i, "pragma_list", [1, 2, 3])
        sch.annotate(sch.get_block("C"), "meta", {"tile": [4, 4]})
        sch.unannotate(i, "pragma_list")

    sch = check_schedule(matmul, steps)
    assert '"meta": {"tile": [4, 4]}' in str(sch.func)
    with pytest.raises(ScheduleError) as err:
        sch.unannotate(_loops(sch)[0], "pragma_list")
    assert err.value.rule == "unannotate.no-such-key"


def test_get_block_names_the_blocks_when_missing():
    with pytest.raises(ScheduleError, match=r"blocks: \['root', 'C'\]") as err:
        Schedule(matmul).get_block("D")
    assert err.value.rule == "get_block.no-such-block"
