"""cache_read, cache_write, reindex, set_scope, storage_align: Before/Expected, runs, replays."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def elementwise(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


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


@T.prim_func
def multi_consumer(
    X: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")
):
    A = T.alloc_buffer((128,))
    for i in range(8):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(128, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i * 16 + j)
                B[vi] = A[vi] * T.float32(2)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A[vi]


# -- cache_read ---------------------------------------------------------------------------------


def test_cache_read_of_an_input_and_of_an_intermediate():
    @T.prim_func
    def expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        B = T.alloc_buffer((128, 128))
        A_global = T.alloc_buffer((128, 128))
        B_local = T.alloc_buffer((128, 128), scope="local")
        for ax0, ax1 in T.grid(128, 128):
            with T.block("A_global"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                A_global[v0, v1] = A[v0, v1]
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A_global[vi, vj] * T.float32(2)
        for ax0, ax1 in T.grid(128, 128):
            with T.block("B_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                B_local[v0, v1] = B[v0, v1]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B_local[vi, vj] + T.float32(1)

    def steps(sch):
        assert sch.cache_read(sch.get_block("B"), 0, "global").name == "A_global"
        assert sch.cache_read(sch.get_block("C"), 0, "local").name == "B_local"

    check_schedule(elementwise, steps, expected)


def test_cache_read_goes_before_the_first_consumer_inside_the_common_loop():
    @T.prim_func
    def expected(
        X: T.Buffer((128,), "float32"),
        B: T.Buffer((128,), "float32"),
        C: T.Buffer((128,), "float32"),
    ):
        A = T.alloc_buffer((128,))
        A_shared = T.alloc_buffer((128,), scope="shared")
        for i in range(8):
            for j in range(16):
                with T.block("A"):
                    vi = T.axis.spatial(128, i * 16 + j)
                    A[vi] = X[vi] + T.float32(1)
            for ax0 in range(16):
                with T.block("A_shared"):
                    v0 = T.axis.spatial(128, i * 16 + ax0)
                    A_shared[v0] = A[v0]
            for j in range(16):
                with T.block("B"):
                    vi = T.axis.spatial(128, i * 16 + j)
                    B[vi] = A_shared[vi] * T.float32(2)
        for i in range(128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                C[vi] = A_shared[vi]

    def steps(sch):
        sch.cache_read(sch.get_block("B"), 0, "shared")

    check_schedule(multi_consumer, steps, expected)


def test_cache_read_refuses_an_index_past_the_reads():
    sch = Schedule(elementwise)
    with pytest.raises(ScheduleError, match="out of range") as err:
        sch.cache_read(sch.get_block("B"), 1, "global")
    assert err.value.rule == "cache_read.buffer-index"
    assert_structural_equal(sch.func, elementwise)


@T.prim_func
def accumulate(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = C[vi] + A[vi]


def test_cache_read_refuses_the_block_s_own_output():
    # Without T.init the block lists what it writes among its reads (TVM); with an init it
    # would not (matmul's reads are A, B), so the own-output case needs a block like this one.
    sch = Schedule(accumulate)
    with pytest.raises(ScheduleError) as err:
        sch.cache_read(sch.get_block("C"), 0, "global")  # reads[0] is C itself
    assert err.value.rule == "cache_read.reads-own-output"
    assert_structural_equal(sch.func, accumulate)


# -- cache_write --------------------------------------------------------------------------------


def test_cache_write_of_a_reduction_copies_back_after_it():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        C_local = T.alloc_buffer((16, 12), scope="local")
        for i, j, k in T.grid(16, 12, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C_local[vi, vj] = T.float32(0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(16, 12):
            with T.block("C_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                C[v0, v1] = C_local[v0, v1]

    def steps(sch):
        assert sch.cache_write(sch.get_block("C"), 0, "local").name == "C_local"

    check_schedule(matmul, steps, expected)


def test_cache_write_copies_back_before_the_first_consumer():
    @T.prim_func
    def expected(
        X: T.Buffer((128,), "float32"),
        B: T.Buffer((128,), "float32"),
        C: T.Buffer((128,), "float32"),
    ):
        A = T.alloc_buffer((128,))
        A_global = T.alloc_buffer((128,))
        for i in range(8):
            for j in range(16):
                with T.block("A"):
                    vi = T.axis.spatial(128, i * 16 + j)
                    A_global[vi] = X[vi] + T.float32(1)
            for ax0 in range(16):
                with T.block("A_global"):
                    v0 = T.axis.spatial(128, i * 16 + ax0)
                    A[v0] = A_global[v0]
            for j in range(16):
                with T.block("B"):
                    vi = T.axis.spatial(128, i * 16 + j)
                    B[vi] = A[vi] * T.float32(2)
        for i in range(128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                C[vi] = A[vi]

    def steps(sch):
        sch.cache_write(sch.get_block("A"), 0, "global")

    check_schedule(multi_consumer, steps, expected)


def test_cache_write_after_tiling_keeps_the_loops_and_runs():
    def steps(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, factors=[None, 4])
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.reorder(i0, j0, k, i1, j1)
        sch.cache_write(sch.get_block("C"), 0, "local")
        sch.parallel(i0)
        sch.vectorize(j1)

    check_schedule(matmul, steps)


def test_cache_write_refuses_an_unknown_scope():
    sch = Schedule(matmul)
    with pytest.raises(ScheduleError, match="not a storage scope") as err:
        sch.cache_write(sch.get_block("C"), 0, "registers")
    assert err.value.rule == "cache_write.storage-scope"
    assert_structural_equal(sch.func, matmul)


def test_cache_write_refuses_a_buffer_with_two_producers():
    @T.prim_func
    def two_writers(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A0"):
                vi = T.axis.spatial(8, i)
                A[vi] = T.float32(1)
        for i in range(8):
            with T.block("A1"):
                vi = T.axis.spatial(8, i)
                A[vi] = A[vi] + T.float32(2)

    sch = Schedule(two_writers)
    with pytest.raises(ScheduleError) as err:
        sch.cache_write(sch.get_block("A1"), 0, "global")
    assert err.value.rule == "cache_write.single-writer"
    assert_structural_equal(sch.func, two_writers)


# -- reindex ------------------------------------------------------------------------------------


@T.prim_func
def transpose(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 16), "float32")):
    for i, j in T.grid(32, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * T.float32(2)


def test_reindex_read_lays_the_buffer_out_like_the_iterators():
    @T.prim_func
    def expected(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 16), "float32")):
        A_reindex = T.alloc_buffer((32, 16))
        for ax0, ax1 in T.grid(32, 16):
            with T.block("A_reindex"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                A_reindex[v0, v1] = A[v1, v0]
        for i, j in T.grid(32, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A_reindex[vi, vj] * T.float32(2)

    check_schedule(transpose, lambda sch: sch.reindex(sch.get_block("B"), ("read", 0)), expected)


def test_reindex_write_of_a_reduction():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        C_reindex = T.alloc_buffer((16, 12))
        for i, j, k in T.grid(16, 12, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])  # a block with init: its output is not a read
                T.writes(C_reindex[vi, vj])
                with T.init():
                    C_reindex[vi, vj] = T.float32(0)
                C_reindex[vi, vj] = C_reindex[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(16, 12):
            with T.block("C_reindex"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                C[v0, v1] = C_reindex[v0, v1]

    check_schedule(matmul, lambda sch: sch.reindex(sch.get_block("C"), ("write", 0)), expected)


def test_reindex_refuses_two_access_patterns():
    @T.prim_func
    def two_reads(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi] + A[vi, vj]

    sch = Schedule(two_reads)
    with pytest.raises(ScheduleError, match="2 different index tuples") as err:
        sch.reindex(sch.get_block("B"), ("read", 0))
    assert err.value.rule == "reindex.single-access-pattern"
    assert_structural_equal(sch.func, two_reads)


# -- set_scope and storage_align ----------------------------------------------------------------


def test_set_scope_moves_an_allocated_buffer():
    @T.prim_func
    def expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        B = T.alloc_buffer((128, 128), scope="global.workspace")
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    def steps(sch):
        sch.set_scope(sch.get_block("B"), 0, "global.workspace")

    check_schedule(elementwise, steps, expected)


def test_set_scope_refuses_a_parameter():
    sch = Schedule(elementwise)
    with pytest.raises(ScheduleError, match="not allocated by a block") as err:
        sch.set_scope(sch.get_block("C"), 0, "local")
    assert err.value.rule == "set_scope.allocated-buffer"
    assert_structural_equal(sch.func, elementwise)


def test_storage_align_records_buffer_dim_align():
    @T.prim_func
    def expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
        B = T.alloc_buffer((128, 128))
        for i, j in T.grid(128, 128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"buffer_dim_align": [[0, 0, 128, 1]]})
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    def steps(sch):
        sch.storage_align(sch.get_block("B"), 0, axis=0, factor=64, offset=0)
        sch.storage_align(sch.get_block("B"), 0, axis=0, factor=128, offset=1)  # replaces the first

    check_schedule(elementwise, steps, expected)


def test_storage_align_refuses_an_axis_past_the_rank():
    sch = Schedule(elementwise)
    with pytest.raises(ScheduleError, match="out of range") as err:
        sch.storage_align(sch.get_block("B"), 0, axis=2, factor=128, offset=1)
    assert err.value.rule == "storage_align.axis-range"
    assert_structural_equal(sch.func, elementwise)
