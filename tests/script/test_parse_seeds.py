"""Parsing scripts from TVM's design discussions (docs/architecture.md §12), and running them."""

import numpy as np
import pytest

from tessel.ir.expr import LT, Add, And, FloatImm, IntImm, Mul
from tessel.ir.structural import assert_structural_equal
from tessel.script import parse
from tessel.support.dtype import DataType
from tessel.support.frozen_map import FrozenMap
from tessel.tir.block import BlockRealize, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import (
    Allocate,
    AllocateConst,
    BufferStore,
    DeclBuffer,
    For,
    ForKind,
    SeqStmt,
    While,
)

F32, I32, I64 = DataType.of("float32"), DataType.of("int32"), DataType.of("int64")


def _loops(stmt):
    """The chain of For statements from `stmt` down, and what is below them."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _root_body(func):
    assert isinstance(func.body, BlockRealize)
    root = func.body.block
    assert root.name_hint == "root" and root.iter_vars == () and root.reads == ()
    return root


def _const(expr):
    assert isinstance(expr, IntImm | FloatImm), expr
    return expr.value


# ---------------------------------------------------- scripts from the design discussions
SEED_MATMUL_127 = """
from tvm.script import tir as T

@T.prim_func
def matmul(A: T.Buffer[(127, 127), "float32"], B: T.Buffer[(127, 127), "float32"],
           C: T.Buffer[(127, 127), "float32"]):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] += A[vi, vk] * B[vk, vj]
"""


def test_seed_matmul_with_subscript_buffers_and_augmented_store():
    func = parse(SEED_MATMUL_127)
    assert isinstance(func, PrimFunc) and func.attrs["global_symbol"] == "matmul"
    assert [p.name for p in func.params] == ["A", "B", "C"]
    assert all(p.dtype.is_handle for p in func.params)
    a, b, c = func.param_buffers()
    assert [x.name for x in (a, b, c)] == ["A", "B", "C"]
    assert all(x.const_shape() == (127, 127) and x.dtype == F32 for x in (a, b, c))
    loops, realize = _loops(_root_body(func).body)
    assert [lp.loop_var.name for lp in loops] == ["i", "j", "k"]
    assert all(
        lp.kind is ForKind.SERIAL and _const(lp.extent) == 127 and _const(lp.min) == 0
        for lp in loops
    )
    block = realize.block
    assert block.name_hint == "compute"
    assert [iv.iter_type for iv in block.iter_vars] == [
        IterVarType.DATA_PAR,
        IterVarType.DATA_PAR,
        IterVarType.COMM_REDUCE,
    ]
    assert all(_const(iv.dom.extent) == 127 for iv in block.iter_vars)
    assert realize.iter_values == tuple(lp.loop_var for lp in loops)
    assert isinstance(block.init, BufferStore) and block.init.buffer is c
    assert isinstance(block.init.value, FloatImm) and block.init.value.dtype == F32
    update = block.body
    assert isinstance(update, BufferStore) and isinstance(update.value, Add)
    load_c, product = update.value.a, update.value.b
    assert isinstance(load_c, BufferLoad) and load_c.buffer is c
    assert isinstance(product, Mul) and product.a.buffer is a and product.b.buffer is b
    vi, vj, vk = (iv.var for iv in block.iter_vars)
    assert update.indices == (vi, vj) and product.a.indices == (vi, vk)
    assert {r.buffer.name for r in block.reads} == {
        "A",
        "B",
    }  # TVM: a block with init does not list its output
    assert [r.buffer for r in block.writes] == [c]


SEED_PADDED_MATMUL = """
@T.prim_func
def func(A: T.Buffer[(128, 128), "float32"], B: T.Buffer[(128, 128), "float32"],
         C: T.Buffer[(128, 128), "float32"]):
    for i_0_i_1_fused, j_0_j_1_fused, k_0_k_1_fused in T.grid(128, 128, 128):
        with T.block("compute"):
            vi = T.axis.spatial(127, i_0_i_1_fused)
            vj = T.axis.spatial(127, j_0_j_1_fused)
            vk = T.axis.reduce(127, k_0_k_1_fused)
            T.where(i_0_i_1_fused < 127 and j_0_j_1_fused < 127 and
                    k_0_k_1_fused < 127)
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def test_seed_padded_matmul_has_where_predicate_and_explicit_regions():
    func = parse(SEED_PADDED_MATMUL)
    loops, realize = _loops(_root_body(func).body)
    assert [_const(lp.extent) for lp in loops] == [128, 128, 128]
    block = realize.block
    assert [_const(iv.dom.extent) for iv in block.iter_vars] == [127, 127, 127]
    assert block.iter_vars[2].iter_type is IterVarType.COMM_REDUCE
    pred = realize.predicate
    assert isinstance(pred, And) and isinstance(pred.b, LT) and pred.b.a is loops[2].loop_var
    assert isinstance(pred.a, And) and isinstance(pred.a.a, LT) and _const(pred.a.a.b) == 127
    vi, vj, vk = (iv.var for iv in block.iter_vars)
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [(rg.min, _const(rg.extent)) for rg in block.reads[0].region] == [(vi, 1), (vk, 1)]
    assert block.writes[0].region[1].min is vj


SEED_ALLOCATE_WHILE = """
@T.prim_func
def count():
    x = T.allocate((), "int32", "")
    x[()] = 0
    while x[()] < 128:
        x[()] = x[()] + 1
"""


def test_seed_allocate_returns_a_rank0_buffer_and_while_loops_on_it():
    func = parse(SEED_ALLOCATE_WHILE)
    alloc = func.body
    assert isinstance(alloc, Allocate) and alloc.extents == () and alloc.dtype == I32
    assert alloc.buffer_var.type_annotation.storage_scope == "global"  # "" means global
    decl = alloc.body
    assert isinstance(decl, DeclBuffer) and decl.buffer.data is alloc.buffer_var
    assert decl.buffer.shape == () and decl.buffer.name == "x"
    init, loop = decl.body.seq
    assert isinstance(init, BufferStore) and init.indices == () and _const(init.value) == 0
    assert isinstance(loop, While) and isinstance(loop.condition, LT)
    assert isinstance(loop.condition.a, BufferLoad) and loop.condition.a.buffer is decl.buffer
    step = loop.body
    assert isinstance(step, BufferStore) and isinstance(step.value, Add)


def test_with_allocate_gives_raw_memory_and_decl_buffer_views_it():
    func = parse("""
@T.prim_func
def f():
    with T.allocate([4], "float32", "global") as x_data:
        x = T.decl_buffer((2, 2), "float32", data=x_data)
        x[1, 1] = T.float32(3)
""")
    alloc = func.body
    assert isinstance(alloc, Allocate) and alloc.buffer_var.name == "x_data"
    decl = alloc.body
    assert isinstance(decl, DeclBuffer) and decl.buffer.data is alloc.buffer_var
    assert decl.buffer.const_shape() == (2, 2)
    assert isinstance(decl.body, BufferStore) and decl.body.buffer is decl.buffer


def test_decl_buffer_without_data_allocates():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    X = T.decl_buffer((4,), "float32", scope="local")
    X[0] = A[0]
    A[1] = X[0]
""")
    alloc = func.body
    assert isinstance(alloc, Allocate) and alloc.buffer_var.type_annotation.storage_scope == "local"
    assert isinstance(alloc.body, DeclBuffer) and alloc.body.buffer.scope == "local"
    assert isinstance(alloc.body.body, SeqStmt) and len(alloc.body.body.seq) == 2


def test_seed_allocate_const_with_data_and_with_storage_index():
    func = parse("""
@T.prim_func
def myfunc(out: T.Buffer((10,), "int32")):
    param = T.allocate_const([1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "int32", [10])
    weights = T.allocate_const(None, "float32", [2, 3], irmod_storage_idx=0)
    for i in range(10):
        out[i] = param[i] + T.int32(weights[0, 1])
""")
    const = func.body
    assert isinstance(const, AllocateConst) and const.irmod_storage_idx is None
    np.testing.assert_array_equal(const.data, np.ones(10, "int32"))
    assert isinstance(const.body, DeclBuffer) and const.body.buffer.name == "param"
    indexed = const.body.body
    assert isinstance(indexed, AllocateConst) and indexed.data is None
    assert indexed.irmod_storage_idx == 0 and [_const(e) for e in indexed.extents] == [2, 3]


def test_seed_serial_annotations_keep_a_list_as_a_tuple():
    func = parse("""
@T.prim_func
def fun(x: T.Buffer((16,), "int32")) -> None:
    for k in T.serial(0, 16, annotations={"pragma_key": [1, 2, 3], "nested": {"a": [4]}}):
        x[k] = 1
""")
    loop = func.body
    assert isinstance(loop, For) and loop.kind is ForKind.SERIAL
    assert loop.annotations["pragma_key"] == (1, 2, 3)
    assert isinstance(loop.annotations["nested"], FrozenMap)
    assert loop.annotations["nested"]["a"] == (4,)
    assert isinstance(loop.body.value, IntImm) and loop.body.value.dtype == I32


def test_omitted_reads_and_writes_are_inferred():
    # As TVM infers them: a block with an init does not list its output among its reads.
    explicit = parse(SEED_PADDED_MATMUL)
    inferred = parse(
        SEED_PADDED_MATMUL.replace("T.reads(A[vi, vk], B[vk, vj])", "").replace(
            "T.writes(C[vi, vj])", ""
        )
    )
    block = _loops(_root_body(inferred).body)[1].block
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [r.buffer.name for r in block.writes] == ["C"]
    assert_structural_equal(inferred, explicit)


# ------------------------------------------------------------------ parsed programs run
def _interpreter():
    return pytest.importorskip("tessel.tir.interpreter")


def test_parsed_seed_matmul_runs_like_numpy():
    # the discussion's shapes shrunk (127 -> 15) to keep the interpreter run fast
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (15, 15)).astype("float32") for _ in range(2))
    c = np.full((15, 15), 7, "float32")  # T.init must overwrite it
    _interpreter().run(parse(SEED_MATMUL_127.replace("127", "15")), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_parsed_padded_matmul_computes_only_the_unpadded_corner():
    rng = np.random.default_rng(1)
    a, b = (rng.uniform(-1, 1, (16, 16)).astype("float32") for _ in range(2))
    c = np.full((16, 16), 5, "float32")
    padded = SEED_PADDED_MATMUL.replace("128", "16").replace("127", "15")
    _interpreter().run(parse(padded), a, b, c)
    np.testing.assert_allclose(c[:15, :15], a[:15, :15] @ b[:15, :15], rtol=1e-5, atol=1e-5)
    assert (c[15, :] == 5).all() and (c[:, 15] == 5).all()


def test_parsed_while_loop_over_a_rank0_buffer_counts():
    with_output = 'def count(out: T.Buffer((1,), "int32")):'
    func = parse(SEED_ALLOCATE_WHILE.replace("def count():", with_output) + "    out[0] = x[()]\n")
    out = np.zeros(1, "int32")
    _interpreter().run(func, out)
    assert out[0] == 128


def test_parsed_predicated_vector_store_writes_only_enabled_lanes():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    B.vstore([T.Ramp(0, 1, 4)], A.vload([T.Ramp(0, 1, 4)]) * 2.0,
             predicate=T.Ramp(0, 1, 4) < T.Broadcast(2, 4))
""")
    a, b = np.arange(4, dtype="float32"), np.full(4, -1, "float32")
    _interpreter().run(func, a, b)
    np.testing.assert_array_equal(b, [0, 2, -1, -1])


@pytest.mark.parametrize(
    "text",
    [SEED_MATMUL_127, SEED_PADDED_MATMUL, SEED_ALLOCATE_WHILE],
    ids=["matmul", "padded", "while"],
)
def test_parse_print_parse_is_structurally_equal(text):
    printer = pytest.importorskip("tessel.script.printer")
    func = parse(text)
    assert_structural_equal(parse(printer.script(func)), func)
