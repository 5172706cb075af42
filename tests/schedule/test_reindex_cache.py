"""reindex_cache_read / reindex_cache_write give TVM's printed form: a cache indexed by the block's
iterators through the index map, copied in the block's own iteration space right before (a
read) or after (a write) it; each result runs like the original. TVM's refusals (a region that
is not one point, iterators that do not match) and Tessel's (a colliding map) leave the
schedule unchanged."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def row_sums(A: T.Buffer((4, 6, 5, 3), "float32"), C: T.Buffer((4, 6), "float32")):
    B = T.alloc_buffer((4, 6, 5))
    for i, j, k in T.grid(4, 6, 5):
        for l in range(3):
            with T.block("B"):
                vi, vj, vk, vl = T.axis.remap("SSSR", [i, j, k, l])
                with T.init():
                    B[vi, vj, vk] = T.float32(0)
                B[vi, vj, vk] = B[vi, vj, vk] + A[vi, vj, vk, vl]
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vj, vk]


@T.prim_func
def two_consumers(
    X: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")
):
    A = T.alloc_buffer((64,))
    for i in range(4):
        for j in range(16):
            with T.block("A"):
                vi = T.axis.spatial(64, i * 16 + j)
                A[vi] = X[vi] + T.float32(1)
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(64, i * 16 + j)
                B[vi] = A[vi] * T.float32(2)
    for i in range(64):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            C[vi] = A[vi]


@T.prim_func
def block_under_scope(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(2, 2):
        with T.block("scope"):
            vi, vj = T.axis.remap("SS", [i, j])
            for k, l in T.grid(4, 4):
                with T.block("copy"):
                    vk, vl = T.axis.remap("SS", [k, l])
                    C[vi * 4 + vk, vj * 4 + vl] = A[vi * 4 + vk, vj * 4 + vl]


def test_reindex_cache_read_indexes_the_cache_by_the_mapped_iterators():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((16, 16))
        B_shared = T.alloc_buffer((16, 8, 2), scope="shared")
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(16, 16):
            with T.block("B_shared"):
                vi, vj = T.axis.remap("SS", [i, j])
                B_shared[vj, vi // 2, vi % 2] = B[vi, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B_shared[vj, vi // 2, vi % 2] + T.float32(1)

    def steps(sch):
        copy = sch.reindex_cache_read("C", 0, "shared", lambda i, j: (j, i // 2, i % 2))
        assert copy.name == "B_shared"

    check_schedule(elementwise, steps, expected)


def test_reindex_cache_read_redirects_only_the_given_consumer_inside_the_common_loop():
    @T.prim_func
    def expected(
        X: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")
    ):
        A = T.alloc_buffer((64,))
        A_shared = T.alloc_buffer((4, 16), scope="shared")
        for i in range(4):
            for j in range(16):
                with T.block("A"):
                    vi = T.axis.spatial(64, i * 16 + j)
                    A[vi] = X[vi] + T.float32(1)
            for j in range(16):
                with T.block("A_shared"):
                    vi = T.axis.spatial(64, i * 16 + j)
                    A_shared[vi // 16, vi % 16] = A[vi]
            for j in range(16):
                with T.block("B"):
                    vi = T.axis.spatial(64, i * 16 + j)
                    B[vi] = A_shared[vi // 16, vi % 16] * T.float32(2)
        for i in range(64):
            with T.block("C"):
                vi = T.axis.spatial(64, i)
                C[vi] = A[vi]

    check_schedule(
        two_consumers,
        lambda sch: sch.reindex_cache_read("B", 0, "shared", lambda i: (i // 16, i % 16)),
        expected,
    )


def test_reindex_cache_read_of_an_input_goes_first_in_the_scope_and_takes_star_args():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((16, 16))
        A_local = T.alloc_buffer((16, 16), scope="local")
        for i, j in T.grid(16, 16):
            with T.block("A_local"):
                vi, vj = T.axis.remap("SS", [i, j])
                A_local[vj, vi] = A[vi, vj]
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A_local[vj, vi] * T.float32(2)
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    check_schedule(
        elementwise,
        lambda sch: sch.reindex_cache_read("B", 0, "local", lambda *iters: iters[::-1]),
        expected,
    )


def test_reindex_cache_write_stages_the_output_through_the_mapped_cache():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((16, 16))
        B_shared = T.alloc_buffer((16, 16), scope="shared")
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B_shared[vj, vi] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(16, 16):
            with T.block("B_shared"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = B_shared[vj, vi]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    check_schedule(
        elementwise,
        lambda sch: sch.reindex_cache_write("B", 0, "shared", lambda i, j: (j, i)),
        expected,
    )


def test_reindex_cache_write_of_reductions_copies_back_after_the_reduction_loop():
    @T.prim_func
    def expected(A: T.Buffer((4, 6, 5, 3), "float32"), C: T.Buffer((4, 6), "float32")):
        B = T.alloc_buffer((4, 6, 5))
        B_shared = T.alloc_buffer((6, 4, 5), scope="shared")
        C_shared = T.alloc_buffer((6, 4), scope="shared")
        for i, j, k in T.grid(4, 6, 5):
            for l in range(3):
                with T.block("B"):
                    vi, vj, vk, vl = T.axis.remap("SSSR", [i, j, k, l])
                    with T.init():
                        B_shared[vj, vi, vk] = T.float32(0)
                    B_shared[vj, vi, vk] = B_shared[vj, vi, vk] + A[vi, vj, vk, vl]
            with T.block("B_shared"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = B_shared[vj, vi, vk]
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C_shared[vj, vi] = T.float32(0)
                C_shared[vj, vi] = C_shared[vj, vi] + B[vi, vj, vk]
        for i, j in T.grid(4, 6):
            with T.block("C_shared"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = C_shared[vj, vi]

    def steps(sch):
        sch.reindex_cache_write("B", 0, "shared", lambda i, j, k, l: (j, i, k))
        sch.reindex_cache_write("C", 0, "shared", lambda i, j, k: [j, i])

    check_schedule(row_sums, steps, expected)


def _refused(func, step, rule):
    sch = Schedule(func)
    with pytest.raises(ScheduleError) as err:
        step(sch)
    assert err.value.rule == rule
    assert_structural_equal(sch.func, func)
    assert not [i for i in sch.trace.instructions if i.kind.startswith("reindex_cache")]


def test_reindex_cache_read_refuses_a_map_that_drops_an_iterator():
    _refused(
        elementwise,
        lambda sch: sch.reindex_cache_read("C", 0, "shared", lambda i, j: j * 2),
        "reindex_cache_read.not-match",
    )


def test_reindex_cache_write_refuses_a_map_that_drops_an_iterator():
    _refused(
        elementwise,
        lambda sch: sch.reindex_cache_write("B", 0, "shared", lambda i, j: i),
        "reindex_cache_write.not-match",
    )


def test_reindex_cache_read_refuses_a_region_that_is_not_a_point():
    _refused(
        block_under_scope,
        lambda sch: sch.reindex_cache_read("scope", 0, "shared", lambda i, j: (i, j)),
        "reindex_cache_read.single-point",
    )


def test_reindex_cache_write_refuses_a_region_that_is_not_a_point():
    _refused(
        block_under_scope,
        lambda sch: sch.reindex_cache_write("scope", 0, "shared", lambda i, j: (i, j)),
        "reindex_cache_write.single-point",
    )


def test_reindex_cache_read_refuses_a_map_sending_two_iterations_to_one_element():
    _refused(
        elementwise,
        lambda sch: sch.reindex_cache_read("C", 0, "shared", lambda i, j: (i // 2, j)),
        "reindex_cache_read.not-injective",
    )


def test_reindex_cache_write_refuses_an_unknown_scope_and_a_wrong_arity():
    _refused(
        elementwise,
        lambda sch: sch.reindex_cache_write("B", 0, "texture", lambda i, j: (j, i)),
        "reindex_cache_write.storage-scope",
    )
    _refused(
        elementwise,
        lambda sch: sch.reindex_cache_write("B", 0, "shared", lambda i: (i,)),
        "reindex_cache_write.index-map",
    )


@T.prim_func
def shift(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,))
    for i in range(14):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] * T.float32(3)


def test_reindex_cache_read_after_an_uneven_split_keeps_the_block_predicate():
    @T.prim_func
    def expected(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
        B = T.alloc_buffer((14,))
        B_local = T.alloc_buffer((4, 4), scope="local")
        for i in range(14):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + T.float32(1)
        for i_0, i_1 in T.grid(4, 4):
            with T.block("B_local"):
                vi = T.axis.spatial(14, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 14)
                B_local[vi // 4, vi % 4] = B[vi]
        for i_0, i_1 in T.grid(4, 4):
            with T.block("C"):
                vi = T.axis.spatial(14, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 14)
                C[vi] = B_local[vi // 4, vi % 4] * T.float32(3)

    def steps(sch):
        sch.split(sch.get_loops("C")[0], [None, 4])
        sch.reindex_cache_read("C", 0, "local", lambda i: (i // 4, i % 4))

    check_schedule(shift, steps, expected)


@T.prim_func
def staged(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (4, n), "float32")
    C = T.match_buffer(c, (4, n), "float32")
    for i, j in T.grid(4, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


def test_reindex_cache_write_fuses_iterators_with_a_symbolic_stride():
    @T.prim_func
    def expected(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (4, n), "float32")
        C = T.match_buffer(c, (4, n), "float32")
        C_global = T.alloc_buffer((n * 4,), "float32")
        for i, j in T.grid(4, n):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                C_global[vi * n + vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(4, n):
            with T.block("C_global"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = C_global[vi * n + vj]

    n = next(e for e in staged.buffer_map[staged.params[0]].shape if not hasattr(e, "value"))
    check_schedule(
        staged,
        lambda sch: sch.reindex_cache_write("B", 0, "global", lambda i, j: (i * n + j,)),
        expected,
        shape_vars={"n": 5},
    )
