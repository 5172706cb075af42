"""compute_inline and reverse_compute_inline: Before/Expected, runs, replays, and refusals."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def two_stages(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_inline_substitutes_the_producer_and_removes_its_loops_and_buffer():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    check_schedule(two_stages, lambda sch: sch.compute_inline(sch.get_block("B")), expected)


def test_compute_inline_maps_each_read_index_into_the_producer_value():
    @T.prim_func
    def before(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((8, 8))
        C = T.alloc_buffer((8, 8))
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(vi)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vj, vi] * B[vi, vj]
        for i, j in T.grid(8, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = B[vi, 7 - vj] - C[vi, vj]

    @T.prim_func
    def expected(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
        C = T.alloc_buffer((8, 8))
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = (A[vj, vi] + T.float32(vj)) * (A[vi, vj] + T.float32(vi))
        for i, j in T.grid(8, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = A[vi, 7 - vj] + T.float32(vi) - C[vi, vj]

    check_schedule(before, lambda sch: sch.compute_inline(sch.get_block("B")), expected)


def test_compute_inline_refuses_a_block_that_writes_a_parameter():
    sch = Schedule(two_stages)
    with pytest.raises(ScheduleError, match="parameter of the function") as err:
        sch.compute_inline(sch.get_block("C"))
    assert err.value.rule == "compute_inline.output-buffer"
    assert_structural_equal(sch.func, two_stages)
    assert len(sch.trace) == 1  # only get_block was recorded


def test_compute_inline_refuses_a_reduction():
    @T.prim_func
    def row_sum(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for i, k in T.grid(8, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] * T.float32(2)

    sch = Schedule(row_sum)
    with pytest.raises(ScheduleError, match="is a reduction") as err:
        sch.compute_inline(sch.get_block("B"))
    assert err.value.rule == "compute_inline.reduction"
    assert_structural_equal(sch.func, row_sum)


def test_compute_inline_refuses_a_body_that_is_not_one_store():
    @T.prim_func
    def two_stores(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        D = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
                D[vi] = A[vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] + D[vi]

    sch = Schedule(two_stores)
    with pytest.raises(ScheduleError, match="single store") as err:
        sch.compute_inline(sch.get_block("B"))
    assert err.value.rule == "compute_inline.not-single-store"
    assert_structural_equal(sch.func, two_stores)


def test_compute_inline_refuses_store_indices_that_are_not_iterators():
    @T.prim_func
    def shifted(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((9,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi + 1] = A[vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi + 1]

    sch = Schedule(shifted)
    with pytest.raises(ScheduleError, match="distinct block iterators") as err:
        sch.compute_inline(sch.get_block("B"))
    assert err.value.rule == "compute_inline.not-single-store"
    assert_structural_equal(sch.func, shifted)


# ------------------------------------------------------------------------ reverse_compute_inline


def test_reverse_compute_inline_folds_the_consumer_into_the_producer():
    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    check_schedule(two_stages, lambda sch: sch.reverse_compute_inline(sch.get_block("C")), expected)


def test_reverse_compute_inline_inverts_a_transposing_read():
    @T.prim_func
    def before(
        A: T.Buffer((8, 4), "float32"), D: T.Buffer((4,), "float32"), C: T.Buffer((4, 8), "float32")
    ):
        B = T.alloc_buffer((8, 4))
        for i, j in T.grid(8, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for i, j in T.grid(4, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vj, vi] * D[vi]

    @T.prim_func
    def expected(
        A: T.Buffer((8, 4), "float32"), D: T.Buffer((4,), "float32"), C: T.Buffer((4, 8), "float32")
    ):
        for i, j in T.grid(8, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vj, vi] = (A[vi, vj] + T.float32(1)) * D[vj]

    check_schedule(before, lambda sch: sch.reverse_compute_inline(sch.get_block("C")), expected)


def test_reverse_compute_inline_guards_producer_instances_the_consumer_never_read():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((16,))
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * T.float32(3)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi + 4] + T.float32(1)

    sch = check_schedule(before, lambda sch: sch.reverse_compute_inline(sch.get_block("C")))
    text = str(sch.func)
    assert "T.where" in text and 'T.block("C")' not in text


def test_reverse_compute_inline_refuses_a_read_that_is_not_injective():
    @T.prim_func
    def broadcast(A: T.Buffer((8,), "float32"), C: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi]

    sch = Schedule(broadcast)
    with pytest.raises(ScheduleError, match="not an injective") as err:
        sch.reverse_compute_inline(sch.get_block("C"))
    assert err.value.rule == "reverse_compute_inline.not-injective"
    assert_structural_equal(sch.func, broadcast)


def test_reverse_compute_inline_refuses_a_consumer_of_two_produced_buffers():
    @T.prim_func
    def join(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        D = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = A[vi] + T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] + D[vi]

    sch = Schedule(join)
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_inline(sch.get_block("C"))
    assert err.value.rule == "reverse_compute_inline.single-producer"
    assert_structural_equal(sch.func, join)


def test_compute_inline_casts_a_wider_read_index_to_the_producer_iterator_type():
    # The producer's row iterator is int32 (extent 4), the symbolic reshape reads it at an
    # int64 index (k // n): the substituted index is cast, not mixed into int32 arithmetic.
    from tessel import te, topi
    from tessel.arith.dims import symbol

    n = symbol("n", 1, 64)
    a = te.placeholder((4, n), name="a")
    scaled = te.compute((4, n), lambda i, j: a[i, j] * te.cast(i * 3 + 1, "float32"), name="scaled")
    func = te.create_prim_func([a, topi.reshape(scaled, (4 * n,))])
    check_schedule(
        func, lambda sch: sch.compute_inline(sch.get_block("scaled")), shape_vars={"n": 5}
    )
