"""CompactBufferAllocation: an alloc_buffer shrinks to the region its block touches, accesses
shift by the region's start; symbolic regions keep the shape; results agree (interpreter, C)."""

from tessel.ir import builders
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.tir.block import Block
from tessel.transform import CompactBufferAllocation, PlanBufferAllocation


def _compact(func):
    return CompactBufferAllocation()(IRModule.from_func(func))[func.name]


def test_tile_buffer_shrinks_to_the_rows_one_iteration_touches():
    @T.prim_func
    def before(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("tile"):
                T.reads(A[i * 4 : i * 4 + 4, 0:16])
                T.writes(C[i * 4 : i * 4 + 4, 0:16])
                B = T.alloc_buffer((16, 16))
                for ii, j in T.grid(4, 16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j)
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for ii, j in T.grid(4, 16):
                    with T.block("C"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j)
                        C[vi, vj] = B[vi, vj] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("tile"):
                T.reads(A[i * 4 : i * 4 + 4, 0:16])
                T.writes(C[i * 4 : i * 4 + 4, 0:16])
                B = T.alloc_buffer((4, 16))
                for ii, j in T.grid(4, 16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j)
                        B[vi - i * 4, vj] = A[vi, vj] * T.float32(2)
                for ii, j in T.grid(4, 16):
                    with T.block("C"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j)
                        C[vi, vj] = B[vi - i * 4, vj] + T.float32(1)

    after = _compact(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_region_with_a_symbolic_extent_keeps_the_shape():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32"), n: T.int32):
        B = T.alloc_buffer((16,))
        for i in range(T.min(n, 16)):
            B[i] = A[i] + T.float32(1)
        for i in range(T.min(n, 16)):
            C[i] = B[i] * T.float32(2)

    after = _compact(before)
    assert after is before
    check_same_results(before, after)


def _tiled_cached_matmul(n, tile_i, tile_j):
    @T.prim_func
    def matmul(
        A: T.Buffer((n, n), "float32"),
        B: T.Buffer((n, n), "float32"),
        C: T.Buffer((n, n), "float32"),
    ):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, tile_i])
    j0, j1 = sch.split(j, factors=[None, tile_j])
    sch.reorder(i0, j0, k, i1, j1)
    copy = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(copy, j0)
    return sch.func


def test_cache_write_tile_of_a_tiled_matmul_is_allocated_per_tile():
    before = _tiled_cached_matmul(64, 8, 16)
    mod = CompactBufferAllocation()(PlanBufferAllocation()(IRModule.from_func(before)))
    after = mod[before.name]
    (c_local,) = (
        b for n in post_order(after.body) if isinstance(n, Block) for b in n.alloc_buffers
    )
    assert c_local.name == "C_local"
    assert [builders.is_const_int(e) and e.value for e in c_local.shape] == [8, 16]
    check_same_results(before, after)


def test_cache_write_tile_under_a_symbolic_row_count_is_allocated_per_tile():
    # rows = n: the last tile is guarded (min(8, n - i * 8) rows); the tile stays a tile of
    # 8 x 32 accumulators rather than a buffer of every row (its execution is checked in
    # tests/schedule/test_rules_symbolic_extents.py).
    from tessel import te, topi
    from tessel.arith.dims import symbol
    from tessel.schedule.rules import default_schedule

    n = symbol("n", 1, 512)
    a, w = te.placeholder((n, 64), name="A"), te.placeholder((64, 64), name="W")
    scheduled = default_schedule(te.create_prim_func([a, w, topi.nn.dense(a, w)])).func
    mod = CompactBufferAllocation()(PlanBufferAllocation()(IRModule.from_func(scheduled)))
    (local,) = (
        b
        for node in post_order(mod[scheduled.name].body)
        if isinstance(node, Block)
        for b in node.alloc_buffers
        if b.scope == "local"
    )
    assert [builders.is_const_int(e) and e.value for e in local.shape] == [8, 32]
