"""Block read/write regions as TVM's GetBlockReadWriteRegion infers them (issue 12).

A block with `T.init()` does not list what it writes among its reads, a block without init
that reads what it writes does, a region through `match_buffer` is the accessed part of the
source, and a data pointer used directly is an opaque access (read and written whole).
"""

from tessel.ir import builders
from tessel.ir.expr import IntImm, Range, Var
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.support.dtype import int32
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, IterVar, IterVarType
from tessel.tir.buffer import decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Evaluate


def _assert_same(actual: PrimFunc, expected: PrimFunc) -> None:
    assert_structural_equal(actual, with_changes(expected, attrs=actual.attrs))


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


def test_a_block_with_init_does_not_read_what_it_writes():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 8), "float32"),
        B: T.Buffer((8, 12), "float32"),
        C: T.Buffer((16, 12), "float32"),
    ):
        for i, j, k in T.grid(16, 12, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    _assert_same(matmul, expected)


def test_a_block_without_init_that_reads_what_it_writes_keeps_it_in_reads():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = C[vi] + A[vi]

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                T.reads(C[vi], A[vi])
                T.writes(C[vi])
                C[vi] = C[vi] + A[vi]

    _assert_same(before, expected)


def test_a_nested_reduction_gives_its_outer_block_only_the_write():
    @T.prim_func
    def before(A: T.Buffer((16, 8), "float32"), S: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("outer"):
                vi = T.axis.spatial(16, i)
                for k in range(8):
                    with T.block("S"):
                        vi2 = T.axis.spatial(16, vi)
                        vk = T.axis.reduce(8, k)
                        with T.init():
                            S[vi2] = T.float32(0)
                        S[vi2] = S[vi2] + A[vi2, vk]

    outer = before.body.block.body.body.block
    assert outer.name_hint == "outer"
    assert [r.buffer.name for r in outer.reads] == ["A"]
    assert [w.buffer.name for w in outer.writes] == ["S"]


def test_cache_read_index_names_the_same_buffer_as_in_tvm():
    """reads[0] of matmul's block is A (TVM's index), so cache_read(block, 0) caches A."""
    sch = Schedule(matmul)
    block = sch.get_block("C")
    sch.cache_read(block, 0, "global")
    reads = sch.block(block).block.reads
    assert [r.buffer.name for r in reads] == ["A_global", "B"]


def test_a_match_buffer_access_is_the_element_of_the_source_it_reaches():
    @T.prim_func
    def before(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                sub = T.match_buffer(A[vi, 4:8], (4,))
                B[vi] = sub[1] + sub[2]

    @T.prim_func
    def expected(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                T.reads(A[vi, 5:7])
                T.writes(B[vi])
                sub = T.match_buffer(A[vi, 4:8], (4,))
                B[vi] = sub[1] + sub[2]

    _assert_same(before, expected)


def test_a_match_buffer_of_fewer_dimensions_keeps_the_leading_source_range():
    @T.prim_func
    def before(A: T.Buffer((4, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                sub = T.match_buffer(A[2, vi, 0:16], (16,))
                for k in range(4):
                    B[vi] = sub[k * 2]

    block = before.body.block.body.body.block
    (read,) = block.reads
    assert read.buffer.name == "A"
    assert [(str(r.min), str(r.extent)) for r in read.region] == [
        ("2", "1"),
        ("vi", "1"),
        ("0", "7"),
    ]


def test_a_data_pointer_used_directly_is_read_and_written_whole():
    a, b = decl_buffer((16,), "float32", "A"), decl_buffer((16,), "float32", "B")
    vi = Var("vi")
    call = T.call_extern("int32", "fill", a.data, b[vi])
    block = Block(
        (IterVar(Range(IntImm(int32, 0), IntImm(int32, 16)), vi, IterVarType.DATA_PAR),),
        (),
        (),
        "opaque",
        Evaluate(call),
    )
    reads, writes = infer_access_regions(block, buffers=(a, b))
    assert [r.buffer for r in reads] == [b, a]
    assert [w.buffer for w in writes] == [a]
    full = writes[0].region[0]
    assert builders.is_const_int(full.min, 0)
    assert builders.is_const_int(full.extent, 16)
