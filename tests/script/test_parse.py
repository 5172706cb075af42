"""Scripts parse to the IR docs/dialect.md describes (TVM's own scripts: test_parse_seeds.py)."""

import inspect

import numpy as np
import pytest

from tessel.ir import builders
from tessel.ir.expr import (
    EQ,
    Add,
    And,
    Broadcast,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Ramp,
    Select,
    StringImm,
    Var,
)
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.script import ir as I
from tessel.script import parse
from tessel.script import tir as T
from tessel.support.dtype import DataType
from tessel.tir import builtin
from tessel.tir.block import BlockRealize, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import (
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
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


# ------------------------------------------------------------------ loops
def test_loop_kinds_bounds_and_thread_binding():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for b in T.thread_binding(8, thread="blockIdx.x"):
        for t in T.thread_binding(0, 2, thread="threadIdx.x"):
            for p in T.parallel(2):
                for v in T.vectorized(1, 3):
                    for u in T.unroll(2, annotations={"k": 1.5}):
                        for r in range(2, 4):
                            A[b * 8 + t + p + v + u + r] = T.float32(0)
""")
    loops, store = _loops(func.body)
    assert [lp.kind for lp in loops] == [
        ForKind.THREAD_BINDING,
        ForKind.THREAD_BINDING,
        ForKind.PARALLEL,
        ForKind.VECTORIZED,
        ForKind.UNROLLED,
        ForKind.SERIAL,
    ]
    assert [lp.thread_binding for lp in loops[:2]] == ["blockIdx.x", "threadIdx.x"]
    assert [(_const(lp.min), _const(lp.extent)) for lp in loops] == [
        (0, 8),
        (0, 2),
        (0, 2),
        (1, 2),
        (0, 2),
        (2, 2),
    ]
    assert loops[4].annotations == {"k": 1.5}
    assert isinstance(store, BufferStore)


def test_loop_variable_dtype_follows_the_extent():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((T.int64(8),), "float32")):
    for i in range(T.int64(8)):
        A[i] = T.float32(0)
    for j, k in T.grid(T.int64(2), 4):
        A[j * 4 + k] = T.float32(1)
""")
    first, second = func.body.seq
    assert first.loop_var.dtype == I64 and first.min.dtype == I64
    assert second.loop_var.dtype == I64 and second.body.loop_var.dtype == I32
    assert func.param_buffers()[0].shape[0].dtype == I64


# ------------------------------------------------------------------ functions and buffers
def test_handle_match_buffer_symbolic_shapes_scalar_params_and_attrs():
    func = parse("""
@T.prim_func(private=True)
def f(a: T.handle, b: T.handle, alpha: T.float32, m: T.int32):
    T.func_attr({"tir.noalias": True, "sizes": [1, 2]})
    n = T.int32()
    k = T.var("int64")
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, [k], "float16", strides=[1], offset_factor=4)
    for i, j in T.grid(n, m):
        A[i, j] = A[i, j] * alpha
""")
    a, b, alpha, m = func.params
    assert a.dtype.is_handle and alpha.dtype == F32 and m.dtype == I32
    assert "global_symbol" not in func.attrs
    assert func.attrs["tir.noalias"] is True and func.attrs["sizes"] == (1, 2)
    buf_a, buf_b = func.buffer_map[a], func.buffer_map[b]
    n = buf_a.shape[0]
    assert isinstance(n, Var) and n.name == "n" and n.dtype == I32 and buf_a.shape[1] is m
    assert buf_b.shape[0].dtype == I64 and buf_b.dtype == DataType.of("float16")
    assert _const(buf_b.strides[0]) == 1 and buf_b.offset_factor == 4
    outer, _ = _loops(func.body)
    assert outer[0].extent is n and outer[1].extent is m
    assert isinstance(outer[1].body.value, Mul) and outer[1].body.value.b is alpha


def test_buffer_param_keywords_and_defaults():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((4, 4)), B: T.Buffer((16,), "int8", scope="shared", align=16,
                                       axis_separators=[1])):
    B[0] = T.int8(-3)
""")
    buf_a, buf_b = func.param_buffers()
    assert buf_a.dtype == F32 and buf_a.scope == "global"  # TVM's defaults
    assert buf_b.scope == "shared" and buf_b.data_alignment == 16 and buf_b.axis_separators == (1,)
    assert func.body.value.value == -3 and func.body.value.dtype == DataType.of("int8")


def test_module_with_two_functions_and_attrs():
    mod = parse("""
from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    I.module_attrs({"kind": "test"})

    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)

    @T.prim_func(private=True)
    def helper(B: T.Buffer((2,), "int32")):
        B[1] = 7
""")
    assert isinstance(mod, IRModule) and mod.names() == ["main", "helper"]
    assert mod["main"].attrs["global_symbol"] == "main"
    assert "global_symbol" not in mod["helper"].attrs
    assert mod.attrs["kind"] == "test"


# ------------------------------------------------------------------ blocks
def test_block_features_axis_kinds_attrs_alloc_and_match_buffer():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 4):
        with T.sblock("B"):
            vi = T.axis.S((0, 8), i)
            vk = T.axis.R(4, k)
            vs = T.axis.scan(8, i)
            vo = T.axis.opaque(4, k)
            T.reads(A[vi, 0:16])
            T.writes(B[vi])
            T.block_attr({"meta": [1, "x"], "flag": True})
            tmp = T.alloc_buffer((16,), "float32", scope="local")
            sub = T.match_buffer(A[vi, 0:16], (16,), "float32")
            tmp[vk] = sub[vk * 4]
            B[vi] = tmp[vk] + T.float32(vs + vo)
""")
    loops, realize = _loops(_root_body(func).body)
    block = realize.block
    assert block.name_hint == "B"
    assert [iv.iter_type for iv in block.iter_vars] == [
        IterVarType.DATA_PAR,
        IterVarType.COMM_REDUCE,
        IterVarType.ORDERED,
        IterVarType.OPAQUE,
    ]
    assert _const(block.iter_vars[0].dom.min) == 0 and _const(block.iter_vars[0].dom.extent) == 8
    assert block.annotations == {"meta": (1, "x"), "flag": True}
    (tmp,) = block.alloc_buffers
    assert tmp.name == "tmp" and tmp.scope == "local"
    (match,) = block.match_buffers
    assert match.buffer.name == "sub" and match.source.buffer is func.param_buffers()[0]
    assert _const(match.source.region[1].extent) == 16
    assert realize.iter_values == (
        loops[0].loop_var,
        loops[1].loop_var,
        loops[0].loop_var,
        loops[1].loop_var,
    )


def test_function_level_alloc_buffer_goes_to_the_root_block():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    tmp = T.alloc_buffer((4,))
    for i in range(4):
        with T.block("copy"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(tmp[vi])
            tmp[vi] = A[vi]
""")
    root = _root_body(func)
    assert [b.name for b in root.alloc_buffers] == ["tmp"]
    assert root.alloc_buffers[0].scope == "global" and root.alloc_buffers[0].dtype == F32


def test_explicit_root_block_parses_to_the_same_ir():
    implicit = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            T.reads()
            T.writes(A[vi])
            A[vi] = T.float32(0)
""")
    explicit = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    with T.block("root"):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                T.reads()
                T.writes(A[vi])
                A[vi] = T.float32(0)
""")
    assert_structural_equal(implicit, explicit)


# ------------------------------------------------------------------ statements
def test_let_assert_if_else_attr_evaluate_and_bare_calls():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((4,), "float32"), n: T.int32):
    x = n + 1
    y: T.int64 = T.int64(2)
    assert x > 0, "x must be positive"
    with T.attr(A.data, "pragma_hint", [1, 2]):
        if 0 <= n < 4:
            A[n] = T.float32(1)
        else:
            A[0] = T.undef()
    T.evaluate(T.call_extern("int32", "side_effect", x))
    T.assume(n < 100)
""")
    let_x = func.body
    assert isinstance(let_x, LetStmt) and let_x.var.name == "x" and isinstance(let_x.value, Add)
    let_y = let_x.body
    assert isinstance(let_y, LetStmt) and let_y.var.dtype == I64
    check = let_y.body
    assert isinstance(check, AssertStmt) and check.message.value == "x must be positive"
    attr, evaluate, assume = check.body.seq
    assert isinstance(attr, AttrStmt) and attr.attr_key == "pragma_hint" and attr.value == (1, 2)
    assert attr.node is func.param_buffers()[0].data
    branch = attr.body
    assert isinstance(branch, IfThenElse) and isinstance(branch.condition, And)
    assert isinstance(branch.else_case, BufferStore) and builtin.is_undef(branch.else_case.value)
    assert branch.else_case.value.dtype == F32  # T.undef() takes the buffer's dtype
    call = evaluate.value
    assert call.op is builtin.call_extern_op and call.args[0].value == "side_effect"
    assert call.args[1] is let_x.var
    assert isinstance(assume, Evaluate) and assume.value.op is builtin.assume_op


def test_python_condition_is_decided_while_parsing():
    func = parse(
        """
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    if USE_ONE:
        A[0] = T.float32(1)
    else:
        A[0] = T.float32(2)
""",
        extra_vars={"USE_ONE": False},
    )
    assert isinstance(func.body, BufferStore) and func.body.value.value == 2.0


def test_vector_load_and_store_with_predicates():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    B.vstore([T.Ramp(0, 1, 4)], A.vload([T.Ramp(4, 1, 4)], predicate=T.Broadcast(True, 4)),
             predicate=T.Broadcast(False, 4))
    B[T.Ramp(4, 1, 4)] = T.Broadcast(T.float32(0), 4)
""")
    store, plain = func.body.seq
    assert isinstance(store, BufferStore) and isinstance(store.indices[0], Ramp)
    assert store.predicate.dtype == DataType.of("boolx4")
    load = store.value
    assert isinstance(load, BufferLoad) and load.dtype == DataType.of("float32x4")
    assert isinstance(load.predicate, Broadcast) and load.predicate.value.value == 1
    assert plain.predicate is None and isinstance(plain.value, Broadcast)


def test_expressions_of_the_dialect_table():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((16,), "float32"), I: T.Buffer((16,), "int32"), i: T.int32, j: T.int32):
    I[0] = i // j + i % j + T.floordiv(i, 3) - T.floormod(i, 3)
    I[1] = T.truncdiv(i, j) * T.truncmod(i, j)
    I[2] = T.min(i, j) + T.max(i, 1)
    I[3] = T.Select(i < j, i, j) + T.if_then_else(i == j, 1, 2)
    I[4] = T.Cast("int32", A[0]) + T.let(i, 5, i + 1)
    A[0] = A[1] / A[2] + T.float32(i) + 1.5
    A[1] = T.exp(A[0]) + T.log(A[0]) + T.sqrt(A[0]) + T.tanh(A[0]) + T.erf(A[0])
    A[2] = T.sigmoid(A[0]) + T.pow(A[0], 2.0) + T.fabs(A[0]) + T.floor(A[0]) + T.ceil(A[0])
    A[3] = T.round(A[0]) + T.float32("inf") + T.float32("nan") + T.float16(1) * 0
    if (i < j or not i != j) and i >= 0:
        A[4] = T.float32(1.0 / 32)
""")
    s = func.body.seq
    v0 = s[0].value
    assert isinstance(v0, Add) or isinstance(v0.a, Add)
    kinds = {type(n) for n in _walk(s[0].value)}
    assert {FloorDiv, FloorMod} <= kinds
    assert {Div, Mod, Mul} <= {type(n) for n in _walk(s[1].value)}
    assert {Min, Max} <= {type(n) for n in _walk(s[2].value)}
    v3 = {type(n) for n in _walk(s[3].value)}
    assert Select in v3 and EQ in v3 and Call in v3
    v4 = {type(n) for n in _walk(s[4].value)}
    assert Cast in v4 and Let in v4
    v5 = s[5].value
    assert v5.dtype == F32 and {Div, Cast} <= {type(n) for n in _walk(v5)}
    ops = {n.op.name for n in _walk(s[6].value) | _walk(s[7].value) if isinstance(n, Call)}
    assert ops == {
        "tir.exp",
        "tir.log",
        "tir.sqrt",
        "tir.tanh",
        "tir.erf",
        "tir.sigmoid",
        "tir.pow",
        "tir.fabs",
        "tir.floor",
        "tir.ceil",
    }
    infs = [n.value for n in _walk(s[8].value) if isinstance(n, FloatImm)]
    assert float("inf") in infs and any(np.isnan(v) for v in infs)
    cond = s[9].condition
    assert isinstance(cond, And) and isinstance(cond.a, Or) and isinstance(cond.a.b, Not)
    assert s[9].then_case.value.value == 1.0 / 32


def _walk(expr):
    """Every expression node under `expr` (a set, for membership checks)."""
    from tessel.ir.functor import post_order

    return set(post_order(expr))


# ------------------------------------------------------------------ decorator path
N = 16


def _double(x):
    return x * 2


def test_decorator_uses_globals_closures_and_real_spans():
    scale = 3

    @T.prim_func
    def kernel(A: T.Buffer((N,), "float32")):
        for i in range(N // 2):
            A[_double(i)] = T.float32(scale)

    assert isinstance(kernel, PrimFunc) and kernel.param_buffers()[0].const_shape() == (16,)
    loop = kernel.body
    assert _const(loop.extent) == 8
    assert isinstance(loop.body.indices[0], Mul) and loop.body.value.value == 3.0
    def_line = inspect.getsourcelines(test_decorator_uses_globals_closures_and_real_spans)[1]
    assert kernel.span.file == __file__
    assert kernel.span.line == def_line + 4  # the `def kernel` line
    assert loop.span.line == def_line + 5 and loop.span.column == 9


def test_decorator_errors_point_into_the_real_file():
    from tessel.script.errors import ParseError

    with pytest.raises(ParseError) as info:

        @T.prim_func
        def bad(A: T.Buffer((4,), "float32")):
            A[0] = undefined_name  # noqa: F821  (the point of the test)

    err = info.value
    assert err.span.file == __file__
    assert "A[0] = undefined_name" in str(err).splitlines()[1]
    assert err.span.column == 20


def test_ir_module_decorator():
    @I.ir_module
    class Module:
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(N)

    assert isinstance(Module, IRModule) and Module["main"].body.value.value == 16.0


# ------------------------------------------------------------------ helpers outside scripts
def test_t_helpers_build_ir_when_called_directly():
    buf = T.Buffer((4, 8), "int8")
    assert isinstance(buf, Buffer) and buf.const_shape() == (4, 8) and buf.dtype.bits == 8
    assert T.Buffer[(2,), "float16"].dtype == DataType.of("float16")
    zero = T.float32(0)
    assert isinstance(zero, FloatImm) and zero.value == 0.0 and zero.dtype == F32
    x = Var("x", F32)
    assert T.exp(x).op.name == "tir.exp"
    assert _const(T.max(3, 5)) == 5 and isinstance(T.max(x, 1.0), Max)
    assert isinstance(T.Cast("float16", x), Cast)
    assert isinstance(T.Select(x < 1.0, x, 0.0), Select)
    assert T.if_then_else(x < 1.0, x, 0.0).op is builtin.if_then_else_op
    assert T.undef("float32").dtype == F32 and T.assume(x < 0.0).op is builtin.assume_op
    assert T.Ramp(0, 2, 4).dtype == DataType.of("int32x4")
    assert T.Broadcast(x, 8).dtype == DataType.of("float32x8")
    assert isinstance(T.int64(3), IntImm) and T.int64(3).dtype == I64
    assert T.bool(True).value == 1 and isinstance(T.uint8(3), IntImm)
    assert isinstance(T.call_extern("int32", "f", 1).args[0], StringImm)


def test_constant_folding_uses_the_builders():
    func = parse("""
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    A[2 + 3] = T.float32(1) + 2
""")
    assert _const(func.body.indices[0]) == 5 and _const(func.body.value) == 3.0
    assert builders.is_const_int(func.body.indices[0], 5)
