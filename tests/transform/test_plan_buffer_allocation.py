"""PlanBufferAllocation: each alloc_buffer moves to the innermost scope covering its uses, only
across loops whose iterations touch disjoint parts of it; results agree (interpreter, C)."""

from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.transform import PlanBufferAllocation


def _plan(func):
    return PlanBufferAllocation()(IRModule.from_func(func))[func.name]


def test_buffer_used_only_inside_a_loop_is_allocated_by_a_block_under_that_loop():
    @T.prim_func
    def before(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((16, 16))
        for i in range(16):
            for j in range(16):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j in range(16):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(16):
            with T.block(""):
                T.reads(A[i, 0:16])
                T.writes(C[i, 0:16])
                B = T.alloc_buffer((16, 16))
                for j in range(16):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for j in range(16):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

    after = _plan(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_buffer_used_inside_one_block_moves_into_its_alloc_buffers():
    @T.prim_func
    def before(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        with T.block("work"):
            for i in range(8):
                B[i] = A[i] + T.float32(1)
            for i in range(8):
                C[i] = B[i] * T.float32(3)

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        with T.block("work"):
            T.reads(A[0:8])
            T.writes(C[0:8])
            B = T.alloc_buffer((8,))
            for i in range(8):
                B[i] = A[i] + T.float32(1)
            for i in range(8):
                C[i] = B[i] * T.float32(3)

    after = _plan(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_buffer_whose_values_flow_between_iterations_stays_outside_the_loop():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,))
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi]
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = B[vi] + B[T.max(vi - 1, 0)]  # reads the previous iteration's element

    after = _plan(before)
    assert after is before
    check_same_results(before, after)


def _halo_rows(kind):
    """B's rows 2o-1 .. 2o+2 (kept within 0..7) per iteration o of a `kind` loop: neighbouring
    iterations write two rows of each other's."""

    @T.prim_func
    def func(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for o in T.serial(4) if kind == "serial" else T.parallel(4):
            for r in range(4):
                with T.block("B"):
                    v = T.axis.spatial(8, o * 2 - 1 + r)
                    T.where(1 <= o * 2 + r and o * 2 + r < 9)
                    B[v] = A[v] * T.float32(2)
            for r in range(2):
                with T.block("C"):
                    v = T.axis.spatial(8, o * 2 + r)
                    C[v] = B[T.max(v - 1, 0)] + B[v] + B[T.min(v + 1, 7)]

    return func


def test_a_parallel_loop_gets_a_buffer_per_iteration_even_where_iterations_overlap():
    """Overlapping rows (a fused conv chain's halo) written by two iterations of a parallel loop
    into one shared buffer would race: the buffer moves into the loop, as for disjoint ones; a
    serial loop whose iterations overlap keeps it outside."""
    parallel = _halo_rows("parallel")
    after = _plan(parallel)
    assert not after.body.block.alloc_buffers  # no longer allocated at the root
    check_same_results(parallel, after)
    assert _plan(_halo_rows("serial")).body.block.alloc_buffers
