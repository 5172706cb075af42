"""compute_at and reverse_compute_at: Before/Expected, runs, replays, and refusals."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def stencil(A: T.Buffer((130,), "float32"), C: T.Buffer((128,), "float32")):
    B = T.alloc_buffer((130,))
    for i in range(130):
        with T.block("B"):
            vi = T.axis.spatial(130, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = B[vi] + B[vi + 1] + B[vi + 2]


def test_compute_at_covers_the_window_each_tile_of_the_consumer_reads():
    @T.prim_func
    def expected(A: T.Buffer((130,), "float32"), C: T.Buffer((128,), "float32")):
        B = T.alloc_buffer((130,))
        for i_0 in range(16):
            for ax0 in range(10):
                with T.block("B"):
                    vi = T.axis.spatial(130, i_0 * 8 + ax0)
                    B[vi] = A[vi] * T.float32(2)
            for i_1 in range(8):
                with T.block("C"):
                    vi = T.axis.spatial(128, i_0 * 8 + i_1)
                    C[vi] = B[vi] + B[vi + 1] + B[vi + 2]

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("C"))
        i0, _ = sch.split(i, [None, 8])
        sch.compute_at(sch.get_block("B"), i0)

    check_schedule(stencil, steps, expected)


@T.prim_func
def matmul_relu(
    A: T.Buffer((16, 8), "float32"),
    B: T.Buffer((8, 12), "float32"),
    D: T.Buffer((16, 12), "float32"),
):
    C = T.alloc_buffer((16, 12))
    for i, j, k in T.grid(16, 12, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 12):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0))


def test_compute_at_moves_a_reduction_under_the_consumer_row_loop():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        D: T.Buffer((16, 12), "float32"),
    ):
        C = T.alloc_buffer((16, 12))
        for i in range(16):
            for ax0, ax1 in T.grid(12, 8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, ax0, ax1])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
            for j in range(12):
                with T.block("D"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    D[vi, vj] = T.max(C[vi, vj], T.float32(0))

    def steps(sch):
        i, _ = sch.get_loops(sch.get_block("D"))
        sch.compute_at(sch.get_block("C"), i)

    check_schedule(matmul_relu, steps, expected)


def test_compute_at_preserves_unit_loops_when_asked():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        D: T.Buffer((16, 12), "float32"),
    ):
        C = T.alloc_buffer((16, 12))
        for i, j in T.grid(16, 12):
            for ax0, ax1, ax2 in T.grid(1, 1, 8):
                with T.block("C"):
                    vi = T.axis.spatial(16, i + ax0)
                    vj = T.axis.spatial(12, j + ax1)
                    vk = T.axis.reduce(8, ax2)
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = T.max(C[vi, vj], T.float32(0))

    def steps(sch):
        _, j = sch.get_loops(sch.get_block("D"))
        sch.compute_at(sch.get_block("C"), j, preserve_unit_loops=True)

    check_schedule(matmul_relu, steps, expected)


def test_compute_at_guards_the_tail_of_a_split_that_overshoots():
    @T.prim_func
    def before(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        B = T.alloc_buffer((10,))
        for i in range(10):
            with T.block("B"):
                vi = T.axis.spatial(10, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(10):
            with T.block("C"):
                vi = T.axis.spatial(10, i)
                C[vi] = B[vi] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        B = T.alloc_buffer((10,))
        for i_0 in range(3):
            for ax0 in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(10, i_0 * 4 + ax0)
                    T.where(i_0 * 4 + ax0 < 10)
                    B[vi] = A[vi] * T.float32(2)
            for i_1 in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(10, i_0 * 4 + i_1)
                    T.where(i_0 * 4 + i_1 < 10)
                    C[vi] = B[vi] + T.float32(1)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("C"))
        i0, _ = sch.split(i, [None, 4])
        sch.compute_at(sch.get_block("B"), i0)

    check_schedule(before, steps, expected)


def test_compute_at_refuses_an_output_block():
    sch = Schedule(matmul_relu)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="output") as err:
        sch.compute_at(sch.get_block("D"), i)
    assert err.value.rule == "compute_at.output-block"
    assert_structural_equal(sch.func, matmul_relu)


def test_compute_at_refuses_a_loop_that_encloses_the_block():
    sch = Schedule(matmul_relu)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="already encloses") as err:
        sch.compute_at(sch.get_block("C"), i)
    assert err.value.rule == "compute_at.loop-is-ancestor"
    assert_structural_equal(sch.func, matmul_relu)


def test_compute_at_refuses_a_loop_that_misses_a_consumer():
    @T.prim_func
    def two_consumers(
        A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")
    ):
        B = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] + T.float32(1)
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = B[vi] - T.float32(1)

    sch = Schedule(two_consumers)
    (i,) = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"\['D'\]") as err:
        sch.compute_at(sch.get_block("B"), i)
    assert err.value.rule == "compute_at.consumers-outside-loop"
    assert_structural_equal(sch.func, two_consumers)


# ---------------------------------------------------------------------------- reverse_compute_at


def test_reverse_compute_at_consumes_each_row_right_after_it_is_produced():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        D: T.Buffer((16, 12), "float32"),
    ):
        C = T.alloc_buffer((16, 12))
        for i in range(16):
            for j, k in T.grid(12, 8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
            for ax0 in range(12):
                with T.block("D"):
                    vi, vj = T.axis.remap("SS", [i, ax0])
                    D[vi, vj] = T.max(C[vi, vj], T.float32(0))

    def steps(sch):
        i, _, _ = sch.get_loops(sch.get_block("C"))
        sch.reverse_compute_at(sch.get_block("D"), i)

    check_schedule(matmul_relu, steps, expected)


def test_reverse_compute_at_reads_the_window_the_producer_tile_wrote():
    @T.prim_func
    def before(A: T.Buffer((32,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((32,))
        for i in range(32):
            with T.block("B"):
                vi = T.axis.spatial(32, i)
                B[vi] = A[vi] + T.float32(1)
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = B[vi * 2] * B[vi * 2 + 1]

    @T.prim_func
    def expected(A: T.Buffer((32,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((32,))
        for i_0 in range(4):
            for i_1 in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(32, i_0 * 8 + i_1)
                    B[vi] = A[vi] + T.float32(1)
            for ax0 in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(16, i_0 * 4 + ax0)
                    C[vi] = B[vi * 2] * B[vi * 2 + 1]

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        i0, _ = sch.split(i, [None, 8])
        sch.reverse_compute_at(sch.get_block("C"), i0)

    check_schedule(before, steps, expected)


def test_reverse_compute_at_refuses_a_loop_that_misses_a_producer():
    @T.prim_func
    def two_producers(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
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

    sch = Schedule(two_producers)
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_at(sch.get_block("C"), i)
    assert err.value.rule == "reverse_compute_at.producers-outside-loop"
    assert_structural_equal(sch.func, two_producers)
