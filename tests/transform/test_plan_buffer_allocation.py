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
