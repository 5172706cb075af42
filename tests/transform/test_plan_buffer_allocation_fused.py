"""PlanBufferAllocation under a fused loop: when no single buffer dimension separates the
iterations (`fused // 4` in one, `fused % 4` in another), isl decides; a buffer the iterations
touch apart is allocated per iteration and CompactBufferAllocation shrinks it to one tile, one
they share stays at the root; results agree (interpreter, C)."""

from __future__ import annotations

import math

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.tir.block import Block
from tessel.tir.stmt import Allocate, For
from tessel.transform import CompactBufferAllocation, PlanBufferAllocation, lower


def _plan(func):
    return PlanBufferAllocation()(IRModule.from_func(func))[func.name]


def _plan_and_compact(func):
    mod = PlanBufferAllocation()(IRModule.from_func(func))
    return CompactBufferAllocation()(mod)[func.name]


def _allocating_block(func, name: str) -> tuple[Block, tuple[int, ...]]:
    """The block that allocates the buffer `name`, and the buffer's shape."""
    for node in post_order(func.body):
        if isinstance(node, Block):
            for buffer in node.alloc_buffers:
                if buffer.name == name:
                    return node, tuple(int(dim.value) for dim in buffer.shape)
    raise AssertionError(f"no block allocates `{name}`")


def _loops_around(func, stmt) -> list[str]:
    """Names of the loop variables of the loops enclosing `stmt`, outermost first."""
    return [
        node.loop_var.name
        for node in reversed(list(post_order(func.body)))
        if isinstance(node, For) and any(inner is stmt for inner in post_order(node.body))
    ]


def _lowered_allocation(func) -> tuple[list[str], int]:
    """The only allocation of the lowered `func`: its enclosing loops and its element count."""
    lowered = lower(func)[func.name]
    (allocation,) = [node for node in post_order(lowered.body) if isinstance(node, Allocate)]
    count = math.prod(int(extent.value) for extent in allocation.extents)
    return _loops_around(lowered, allocation), count


@T.prim_func
def _fused_tile(A: T.Buffer((4, 4, 16), "float32"), C: T.Buffer((4, 4, 16), "float32")):
    B = T.alloc_buffer((4, 4, 16), scope="local")
    for fused in T.serial(16):
        for k in range(16):
            with T.block("B"):
                vi = T.axis.spatial(4, fused // 4)
                vj = T.axis.spatial(4, fused % 4)
                vk = T.axis.spatial(16, k)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
        for k in range(16):
            with T.block("C"):
                vi = T.axis.spatial(4, fused // 4)
                vj = T.axis.spatial(4, fused % 4)
                vk = T.axis.spatial(16, k)
                C[vi, vj, vk] = B[vi, vj, vk] + T.float32(1)


def test_buffer_indexed_by_fused_div_and_mod_is_allocated_inside_the_fused_loop():
    @T.prim_func
    def expected(A: T.Buffer((4, 4, 16), "float32"), C: T.Buffer((4, 4, 16), "float32")):
        for fused in range(16):
            with T.block(""):
                T.reads(A[fused // 4, fused % 4, 0:16])
                T.writes(C[fused // 4, fused % 4, 0:16])
                B = T.alloc_buffer((4, 4, 16), scope="local")
                for k in range(16):
                    with T.block("B"):
                        vi = T.axis.spatial(4, fused // 4)
                        vj = T.axis.spatial(4, fused % 4)
                        vk = T.axis.spatial(16, k)
                        B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
                for k in range(16):
                    with T.block("C"):
                        vi = T.axis.spatial(4, fused // 4)
                        vj = T.axis.spatial(4, fused % 4)
                        vk = T.axis.spatial(16, k)
                        C[vi, vj, vk] = B[vi, vj, vk] + T.float32(1)

    after = _plan(_fused_tile)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ


def test_buffer_under_a_fused_loop_is_compacted_to_sixteen_elements_per_iteration():
    after = _plan_and_compact(_fused_tile)
    block, shape = _allocating_block(after, "B")
    assert _loops_around(after, block) == ["fused"]
    assert math.prod(shape) == 16


def test_lowered_buffer_under_a_fused_loop_is_one_sixteen_element_allocation_per_iteration():
    assert _lowered_allocation(_fused_tile) == (["fused"], 16)


def test_buffer_under_a_fused_loop_gives_the_same_results_in_the_interpreter_and_c():
    check_same_results(_fused_tile, _plan_and_compact(_fused_tile))
    check_same_results(_fused_tile, _fused_tile)  # through the whole lowering pipeline


def test_fused_loop_with_an_outer_loop_and_a_non_zero_start_is_allocated_per_iteration():
    @T.prim_func
    def before(A: T.Buffer((2, 4, 4, 16), "float32"), C: T.Buffer((2, 4, 4, 16), "float32")):
        B = T.alloc_buffer((2, 4, 4, 16), scope="local")
        for o in range(2):
            for fused in T.serial(4, 20):
                for k in range(16):
                    with T.block("B"):
                        vo, vf, vk = T.axis.remap("SSS", [o, fused, k])
                        B[vo, (vf - 4) // 4, vf % 4, vk] = A[vo, (vf - 4) // 4, vf % 4, vk]
                for k in range(16):
                    with T.block("C"):
                        vo, vf, vk = T.axis.remap("SSS", [o, fused, k])
                        C[vo, (vf - 4) // 4, vf % 4, vk] = B[vo, (vf - 4) // 4, vf % 4, vk]

    after = _plan_and_compact(before)
    block, shape = _allocating_block(after, "B")
    assert _loops_around(after, block) == ["o", "fused"]
    assert math.prod(shape) == 16
    check_same_results(before, after)


@T.prim_func
def _pairs_share_a_row(A: T.Buffer((8, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((8, 16), scope="local")
    for fused in T.serial(16):
        for k in range(16):
            with T.block("B"):
                vf, vk = T.axis.remap("SS", [fused, k])
                T.where(fused % 2 == 0)  # the odd iteration reads the row the even one wrote
                B[vf // 2, vk] = A[vf // 2, vk] * T.float32(2)
        for k in range(16):
            with T.block("C"):
                vf, vk = T.axis.remap("SS", [fused, k])
                C[vf, vk] = B[vf // 2, vk] + T.float32(1)


def test_buffer_whose_rows_two_fused_iterations_share_stays_at_the_root():
    assert _plan(_pairs_share_a_row) is _pairs_share_a_row
    assert _lowered_allocation(_pairs_share_a_row) == ([], 128)
    check_same_results(_pairs_share_a_row, _pairs_share_a_row)


def test_buffer_that_no_dimension_separates_but_iterations_share_stays_at_the_root():
    # fused // 4 and fused % 2: iterations 0 and 2 both touch B[0, 0, :], which only the
    # joint (isl) check sees, since neither dimension alone separates consecutive iterations.
    @T.prim_func
    def before(A: T.Buffer((4, 2, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        B = T.alloc_buffer((4, 2, 16), scope="local")
        for fused in T.serial(16):
            for k in range(16):
                with T.block("B"):
                    vf, vk = T.axis.remap("SS", [fused, k])
                    T.where(fused % 4 < 2)  # iterations 2 and 3 read what 0 and 1 wrote
                    B[vf // 4, vf % 2, vk] = A[vf // 4, vf % 2, vk] * T.float32(2)
            for k in range(16):
                with T.block("C"):
                    vf, vk = T.axis.remap("SS", [fused, k])
                    C[vf, vk] = B[vf // 4, vf % 2, vk] + T.float32(1)

    assert _plan(before) is before
    assert _lowered_allocation(before) == ([], 128)
    check_same_results(before, before)
