"""The printer on IR built directly with the Python API: the exact text of each construct."""

import math
import textwrap

import numpy as np
import pytest

from tessel.ir import (
    EQ,
    LT,
    Add,
    And,
    Broadcast,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    GlobalVar,
    IntImm,
    IRModule,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Ramp,
    Range,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
    structural_equal,
)
from tessel.ir.type import PointerType
from tessel.script import parse
from tessel.script.printer import script
from tessel.support.dtype import DataType
from tessel.support.frozen_map import FrozenMap
from tessel.tir import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferLoad,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    IterVarType,
    LetStmt,
    MatchBufferRegion,
    PrimFunc,
    SeqStmt,
    While,
    builtin,
    decl_buffer,
)

I32 = "int32"
TRUE = IntImm("bool", 1)


def c(value, dtype=I32):
    return IntImm(dtype, value) if not isinstance(value, float) else FloatImm(dtype, value)


def f32(value):
    return FloatImm("float32", value)


def dedent(text):
    return textwrap.dedent(text).strip("\n")


def loop(var, extent, body, kind=ForKind.SERIAL, start=0, **options):
    extent = c(extent, var.dtype) if isinstance(extent, int) else extent
    return For(var, c(start, var.dtype), extent, kind, body, **options)


def func(params, body, buffer_map=None, name="main", **attrs):
    attrs = ({"global_symbol": name} if name else {}) | attrs
    return PrimFunc(tuple(params), body, None, FrozenMap(buffer_map or {}), FrozenMap(attrs))


def param_buffer(name, shape, dtype="float32", **options):
    buffer = decl_buffer(shape, dtype, name, **options)
    return Var(name, "handle"), buffer


i, j, k, n = Var("i"), Var("j"), Var("k"), Var("n")
A = decl_buffer((16, 16), "float32", "A")


# ----------------------------------------------------------------------------- constants
@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (c(5), "5"),
        (c(-7), "-7"),
        (c(5, "int64"), "T.int64(5)"),
        (c(-3, "int8"), "T.int8(-3)"),
        (c(3, "uint8"), "T.uint8(3)"),
        (c(1, "bool"), "True"),
        (c(0, "bool"), "False"),
        (f32(0.5), "T.float32(0.5)"),
        (f32(0.1), "T.float32(0.1)"),
        (FloatImm("float64", 1.0000000000000002), "T.float64(1.0000000000000002)"),
        (FloatImm("float16", 2.0), "T.float16(2.0)"),
        (f32(math.inf), 'T.float32("inf")'),
        (f32(-math.inf), 'T.float32("-inf")'),
        (f32(math.nan), 'T.float32("nan")'),
        (StringImm('say "hi"\n'), '"say \\"hi\\"\\n"'),
    ],
)
def test_constants_print_with_their_dtype(expr, text):
    assert script(expr) == text


def test_float_constants_read_back_to_the_same_value():
    for value in (0.1, 1 / 3, 1e-300, 2.0**60 + 1, -0.0, 5e-324):
        printed = script(FloatImm("float64", value))
        assert float(printed[len("T.float64(") : -1]) == value


# ----------------------------------------------------------------------------- operators
@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (Mul(Add(i, j), k), "(i + j) * k"),
        (Add(Mul(i, j), k), "i * j + k"),
        (Sub(i, Sub(j, k)), "i - (j - k)"),
        (Sub(Sub(i, j), k), "i - j - k"),
        (Add(i, Add(j, k)), "i + (j + k)"),
        (Sub(i, c(-3)), "i - -3"),
        (Mul(c(-3), i), "-3 * i"),
        (Sub(c(0), i), "0 - i"),
        (FloorDiv(i, c(4)), "i // 4"),
        (FloorMod(Add(i, j), c(4)), "(i + j) % 4"),
        (FloorDiv(i, FloorDiv(j, k)), "i // (j // k)"),
        (Mul(i, FloorMod(j, k)), "i * (j % k)"),
        (Div(i, j), "T.truncdiv(i, j)"),
        (Mod(i, j), "T.truncmod(i, j)"),
        (
            Div(f32(1.0), Div(f32(2.0), f32(3.0))),
            "T.float32(1.0) / (T.float32(2.0) / T.float32(3.0))",
        ),
        (Min(i, Max(j, k)), "T.min(i, T.max(j, k))"),
        (EQ(LT(i, j), LT(j, k)), "(i < j) == (j < k)"),
        (And(LT(i, j), Or(LT(j, k), EQ(i, k))), "i < j and (j < k or i == k)"),
        (Or(And(LT(i, j), LT(j, k)), EQ(i, k)), "i < j and j < k or i == k"),
        (Not(And(LT(i, j), LT(j, k))), "not (i < j and j < k)"),
        (Not(LT(i, j)), "not i < j"),
        (EQ(Not(LT(i, j)), c(1, "bool")), "(not i < j) == True"),
        (Select(LT(i, j), i, j), "T.Select(i < j, i, j)"),
        (Cast("float32", i), 'T.Cast("float32", i)'),
        (Ramp(i, c(1), 4), "T.Ramp(i, 1, 4)"),
        (Broadcast(f32(0.0), 8), "T.Broadcast(T.float32(0.0), 8)"),
        (Let(n, Mul(i, c(2)), Add(n, c(1))), "T.let(n, i * 2, n + 1)"),
    ],
)
def test_operators_parenthesise_only_where_python_needs_it(expr, text):
    assert script(expr) == text


def test_printed_expressions_evaluate_like_the_ir_in_python():
    # Parentheses placement checked semantically: Python evaluates the text as the IR means it.
    values = {"i": 17, "j": 5, "k": 3}
    cases = {
        Sub(i, Sub(j, k)): 17 - (5 - 3),
        Mul(Sub(i, j), Add(j, k)): (17 - 5) * (5 + 3),
        FloorDiv(Sub(i, c(-4)), FloorMod(j, k)): (17 + 4) // (5 % 3),
        Sub(Mul(c(-2), i), c(-1)): -2 * 17 + 1,
    }
    for expr, expected in cases.items():
        assert eval(script(expr), {}, values) == expected  # noqa: S307  (our own printed text)


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (builtin.math_unary("exp", f32(1.0)), "T.exp(T.float32(1.0))"),
        (builtin.math_binary("pow", f32(2.0), f32(3.0)), "T.pow(T.float32(2.0), T.float32(3.0))"),
        (builtin.if_then_else(LT(i, j), i, j), "T.if_then_else(i < j, i, j)"),
        (builtin.undef(), "T.undef()"),
        (builtin.undef("float32"), 'T.undef(dtype="float32")'),
        (builtin.assume(LT(i, n)), "T.assume(i < n)"),
        (builtin.likely(LT(i, n)), "T.likely(i < n)"),
        (
            builtin.call_extern("float32", "my_sin", f32(1.0)),
            'T.call_extern("float32", "my_sin", T.float32(1.0))',
        ),
        (builtin.bitwise("shift_left", i, c(2)), "T.shift_left(i, 2)"),
    ],
)
def test_builtin_calls_print_as_t_functions(expr, text):
    assert script(expr) == text


def test_loads_print_as_subscripts_or_vload_with_a_predicate():
    x = decl_buffer((), "int32", "x")
    V = decl_buffer((32,), "float32", "V")
    mask = LT(Ramp(i, c(1), 4), Broadcast(c(30), 4))
    assert script(BufferLoad(A, (i, Add(j, c(1))))) == "A[i, j + 1]"
    assert script(BufferLoad(x, ())) == "x[()]"
    assert script(BufferLoad(V, (Ramp(i, c(1), 4),), mask)) == (
        "V.vload([T.Ramp(i, 1, 4)], predicate=T.Ramp(i, 1, 4) < T.Broadcast(30, 4))"
    )


# ----------------------------------------------------------------------------- names
def test_distinct_variables_sharing_a_name_print_distinct_names():
    inner = Var("i")
    body = BufferStore(A, f32(0.0), (i, inner))
    text = script(loop(i, 16, loop(inner, 16, body, ForKind.PARALLEL)))
    assert text == dedent("""
        for i in range(16):
            for i_1 in T.parallel(16):
                A[i, i_1] = T.float32(0.0)
    """)


def test_sibling_loops_reuse_a_name_released_by_the_first():
    other = Var("i")
    seq = SeqStmt(
        (
            loop(i, 4, BufferStore(A, f32(0.0), (i, i))),
            loop(other, 4, BufferStore(A, f32(1.0), (other, other))),
        )
    )
    assert script(seq).splitlines()[2] == "for i in range(4):"


@pytest.mark.parametrize(
    ("hint", "printed"),
    [
        ("lambda", "lambda_"),
        ("T", "T_"),
        ("range", "range_"),
        ("a.b", "a_b"),
        ("0x", "v0x"),
        ("", "v"),
        ("match", "match_"),
    ],
)
def test_names_that_are_not_identifiers_are_sanitised(hint, printed):
    assert script(Add(Var(hint), c(1))) == f"{printed} + 1"


def test_buffers_sharing_a_name_print_distinct_names():
    other = decl_buffer((16, 16), "float32", "A")
    store = BufferStore(A, BufferLoad(other, (i, j)), (i, j))
    assert script(store) == "A[i, j] = A_1[i, j]"


# ----------------------------------------------------------------------------- statements
def test_stores_print_as_assignments_and_vstore():
    x = decl_buffer((), "int32", "x")
    V = decl_buffer((8,), "float32", "V")
    mask = LT(Ramp(c(0), c(1), 4), Broadcast(n, 4))
    seq = SeqStmt(
        (
            BufferStore(x, c(0), ()),
            BufferStore(V, Broadcast(f32(1.0), 4), (Ramp(c(0), c(1), 4),), mask),
            BufferStore(V, builtin.undef("float32"), (c(0),)),
        )
    )
    assert script(seq).splitlines() == [
        "x[()] = 0",
        "V.vstore([T.Ramp(0, 1, 4)], T.Broadcast(T.float32(1.0), 4), "
        "predicate=T.Ramp(0, 1, 4) < T.Broadcast(n, 4))",
        "V[0] = T.undef()",
    ]


def test_let_and_assert_print_their_body_at_the_same_indentation():
    x = Var("x")
    body = AssertStmt(LT(x, c(10)), StringImm("x is small"), BufferStore(A, f32(0.0), (x, x)))
    assert script(LetStmt(x, Add(n, c(1)), body)) == dedent("""
        x: T.int32 = n + 1
        assert x < 10, "x is small"
        A[x, x] = T.float32(0.0)
    """)


def test_if_while_evaluate_and_attr():
    store = BufferStore(A, f32(1.0), (i, i))
    stmt = SeqStmt(
        (
            IfThenElse(LT(i, n), store, Evaluate(c(0))),
            IfThenElse(EQ(i, n), store),
            While(LT(i, n), Evaluate(builtin.call_extern("int32", "tick"))),
            AttrStmt(A, "pragma_key", (1, FrozenMap({"a": 2.5})), store),
        )
    )
    assert script(stmt) == dedent("""
        if i < n:
            A[i, i] = T.float32(1.0)
        else:
            T.evaluate(0)
        if i == n:
            A[i, i] = T.float32(1.0)
        while i < n:
            T.call_extern("int32", "tick")
        T.attr(A, "pragma_key", [1, {"a": 2.5}])
        A[i, i] = T.float32(1.0)
    """)


def _allocated(name, shape, dtype="float32", scope="global"):
    data = Var(name, "handle", PointerType(DataType.of(dtype), scope))
    return data, decl_buffer(shape, dtype, name, data=data)


def test_allocate_with_its_decl_buffer_prints_as_one_line():
    data, X = _allocated("X", (16,), scope="local")
    body = BufferStore(X, f32(0.0), (c(0),))
    stmt = Allocate(data, X.dtype, (c(16),), TRUE, DeclBuffer(X, body))
    assert script(stmt) == dedent("""
        X = T.allocate([16], "float32", "local")
        X[0] = T.float32(0.0)
    """)


def test_allocate_with_a_reshaping_view_prints_the_raw_form():
    data, flat = _allocated("x_data", (16,))
    grid = decl_buffer((4, 4), "float32", "grid", data=data, strides=(c(4), c(1)))
    body = DeclBuffer(grid, BufferStore(grid, f32(1.0), (c(1), c(2))))
    stmt = Allocate(data, flat.dtype, (c(16),), TRUE, body)
    assert script(stmt) == dedent("""
        with T.allocate([16], "float32", "global") as x_data:
            grid = T.decl_buffer((4, 4), "float32", strides=(4, 1), data=x_data)
            grid[1, 2] = T.float32(1.0)
    """)


def test_allocate_followed_by_other_statements_keeps_its_scope():
    data, X = _allocated("X", (4,))
    inner = Allocate(data, X.dtype, (c(4),), TRUE, DeclBuffer(X, BufferStore(X, f32(0.0), (c(0),))))
    after = BufferStore(A, f32(1.0), (c(0), c(0)))
    text = script(SeqStmt((inner, after)))
    assert text.splitlines()[0] == 'with T.allocate([4], "float32", "global") as X:'
    assert text.splitlines()[-1] == "A[0, 0] = T.float32(1.0)"


def test_allocate_const_prints_its_data_flat():
    data, W = _allocated("W", (2, 2), "int32")
    values = np.array([[1, 2], [3, 4]], dtype="int32")
    body = DeclBuffer(W, BufferStore(W, c(0), (c(0), c(0))))
    with_data = AllocateConst(data, W.dtype, (c(2), c(2)), values, None, body)
    by_index = AllocateConst(data, W.dtype, (c(2), c(2)), None, 3, body)
    first_line = script(with_data).splitlines()[0]
    assert first_line == 'W = T.allocate_const([1, 2, 3, 4], "int32", [2, 2])'
    assert script(by_index).splitlines()[0] == (
        'W = T.allocate_const(None, "int32", [2, 2], irmod_storage_idx=3)'
    )


# ----------------------------------------------------------------------------- loops
def test_perfect_serial_nest_prints_as_grid():
    nest = loop(i, 4, loop(j, 8, loop(k, 2, BufferStore(A, f32(0.0), (i, Add(j, k))))))
    assert script(nest).splitlines()[0] == "for i, j, k in T.grid(4, 8, 2):"


def test_grid_stops_where_an_inner_extent_uses_an_outer_variable():
    nest = loop(i, 4, loop(j, Add(i, c(1)), BufferStore(A, f32(0.0), (i, j))))
    assert script(nest).splitlines()[:2] == ["for i in range(4):", "    for j in range(i + 1):"]


@pytest.mark.parametrize(
    ("kind", "start", "options", "header"),
    [
        (ForKind.SERIAL, 2, {}, "for i in range(2, 10):"),
        (
            ForKind.SERIAL,
            0,
            {"annotations": {"pragma_key": (1, 2, 3)}},
            'for i in T.serial(8, annotations={"pragma_key": [1, 2, 3]}):',
        ),
        (ForKind.PARALLEL, 0, {}, "for i in T.parallel(8):"),
        (ForKind.VECTORIZED, 2, {}, "for i in T.vectorized(2, 10):"),
        (
            ForKind.UNROLLED,
            0,
            {"annotations": {"unroll": True}},
            'for i in T.unroll(8, annotations={"unroll": True}):',
        ),
        (
            ForKind.THREAD_BINDING,
            0,
            {"thread_binding": "threadIdx.x"},
            'for i in T.thread_binding(8, thread="threadIdx.x"):',
        ),
    ],
)
def test_loop_kinds_print_their_headers(kind, start, options, header):
    stmt = loop(i, 8, BufferStore(A, f32(0.0), (i, i)), kind, start, **options)
    assert script(stmt).splitlines()[0] == header


def test_symbolic_loop_end_reads_back_from_a_parsed_range():
    lo, hi = Var("lo"), Var("hi")
    stmt = For(i, lo, Sub(hi, lo), ForKind.SERIAL, BufferStore(A, f32(0.0), (i, i)))
    assert script(stmt).splitlines()[0] == "for i in range(lo, hi):"


# ----------------------------------------------------------------------------- blocks
def _matmul_block(extent_k=16, predicate=TRUE):
    C = decl_buffer((16, 16), "float32", "C")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    iter_vars = (
        IterVar(Range(c(0), c(16)), vi, IterVarType.DATA_PAR),
        IterVar(Range(c(0), c(16)), vj, IterVarType.DATA_PAR),
        IterVar(Range(c(0), c(extent_k)), vk, IterVarType.COMM_REDUCE),
    )
    update = BufferStore(C, Add(BufferLoad(C, (vi, vj)), BufferLoad(A, (vi, vk))), (vi, vj))
    reads = (
        BufferRegion(C, (Range(vi, c(1)), Range(vj, c(1)))),
        BufferRegion(A, (Range(vi, c(1)), Range(c(0), c(16)))),
    )
    block = Block(
        iter_vars,
        reads,
        (BufferRegion(C, (Range(vi, c(1)), Range(vj, c(1)))),),
        "C",
        update,
        init=BufferStore(C, f32(0.0), (vi, vj)),
        annotations={"tag": FrozenMap({"x": (1, 2)})},
    )
    realize = BlockRealize((i, j, k), predicate, block)
    return C, loop(i, 16, loop(j, 16, loop(k, 16, realize)))


def test_block_with_loop_bindings_prints_remap_and_header():
    _, nest = _matmul_block()
    assert script(nest) == dedent("""
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(C[vi, vj], A[vi, 0:16])
                T.writes(C[vi, vj])
                T.block_attr({"tag": {"x": [1, 2]}})
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk]
    """)


def test_block_whose_domain_differs_from_the_loop_prints_axes_and_where():
    _, nest = _matmul_block(extent_k=15, predicate=LT(k, c(15)))
    lines = script(nest).splitlines()
    assert lines[2:5] == [
        '        vi, vj = T.axis.remap("SS", [i, j])',
        "        vk = T.axis.reduce(15, k)",
        "        T.where(k < 15)",
    ]


def test_block_buffers_and_domains_with_a_start():
    v = Var("v")
    tile = decl_buffer((4,), "float32", "tile")
    local = decl_buffer((4,), "float32", "local_buf", scope="local")
    source = BufferRegion(A, (Range(v, c(1)), Range(c(4), c(4))))
    block = Block(
        (IterVar(Range(c(2), c(14)), v, IterVarType.ORDERED),),
        (),
        (),
        "b",
        BufferStore(local, BufferLoad(tile, (c(0),)), (c(0),)),
        alloc_buffers=(local,),
        match_buffers=(MatchBufferRegion(tile, source),),
    )
    text = script(BlockRealize((i,), TRUE, block))
    assert text == dedent("""
        with T.block("b"):
            v = T.axis.scan((2, 16), i)
            T.reads()
            T.writes()
            local_buf = T.alloc_buffer((4,), "float32", scope="local")
            tile = T.match_buffer(A[v, 4:8], (4,), "float32")
            local_buf[0] = tile[0]
    """)


def test_block_printed_without_its_realize_shows_domains_only():
    _, nest = _matmul_block()
    lines = script(nest.body.body.body.block).splitlines()
    assert lines[:4] == [
        'with T.block("C", no_realize=True):',
        "    vi = T.axis.spatial(16)",
        "    vj = T.axis.spatial(16)",
        "    vk = T.axis.reduce(16)",
    ]


# ----------------------------------------------------------------------------- functions
def test_function_with_constant_buffers_prints_inline_parameters():
    C, nest = _matmul_block()
    root = BlockRealize((), TRUE, Block((), (), (), "root", nest))
    a, b = Var("A", "handle"), Var("C", "handle")
    f = func([a, b, n], root, {a: A, b: C}, "mm", **{"tir.noalias": True})
    lines = script(f).splitlines()
    assert lines[:6] == [
        "# from tessel.script import tir as T",
        "",
        "@T.prim_func",
        'def mm(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32"), n: T.int32):',
        '    T.func_attr({"tir.noalias": True})',
        '    # with T.block("root"):',
    ]


def test_function_with_symbolic_shape_declares_and_matches():
    m = SizeVar("m")
    a, B = param_buffer("B", (n, m), strides=(m, c(1)), elem_offset=Var("off"))
    f = func([a], BufferStore(B, f32(0.0), (c(0), c(0))), {a: B}, name=None)
    assert script(f) == dedent("""
        # from tessel.script import tir as T

        @T.prim_func(private=True)
        def main(b: T.handle):
            n = T.int32()
            m = T.int32(is_size_var=True)
            off = T.int32()
            B = T.match_buffer(b, (n, m), "float32", strides=(m, 1), elem_offset=off)
            B[0, 0] = T.float32(0.0)
    """)


def test_root_block_with_annotations_is_printed():
    store = BufferStore(A, f32(0.0), (c(0), c(0)))
    inner = BlockRealize((), TRUE, Block((), (), (), "inner", store))
    root = BlockRealize((), TRUE, Block((), (), (), "root", inner, annotations={"k": 1}))
    a = Var("A", "handle")
    assert 'with T.block("root"):' in script(func([a], root, {a: A})).splitlines()[4]


def test_module_attributes_print_arrays_as_lists():
    mod = IRModule(FrozenMap(), FrozenMap({"constants": (np.arange(3, dtype="int32"),)}))
    assert '    I.module_attrs({"constants": [[0, 1, 2]]})' in script(mod).splitlines()


def test_module_prints_each_function_under_its_global_var():
    store = BufferStore(A, f32(0.0), (c(0), c(0)))
    a = Var("A", "handle")
    mod = IRModule(
        FrozenMap(
            {
                GlobalVar("f"): func([a], store, {a: A}, "f"),
                GlobalVar("g"): func([a], store, {a: A}, None),
            }
        )
    )
    lines = script(mod).splitlines()
    assert lines[:6] == [
        "# from tessel.script import ir as I",
        "# from tessel.script import tir as T",
        "",
        "@I.ir_module",
        "class Module:",
        "    @T.prim_func",
    ]
    assert "    @T.prim_func(private=True)" in lines
    assert '    def g(A: T.Buffer((16, 16), "float32")):' in lines


def test_hand_built_function_reads_back_structurally_equal():
    # Free buffers (a flattened view of a parameter) and T.let variables are declared up front.
    x = Var("x", "float32")
    a = Var("A", "handle")
    flat = decl_buffer((256,), "float32", "A_flat", data=A.data)
    body = loop(i, 256, BufferStore(flat, Let(x, f32(2.0), Mul(x, x)), (i,)))
    f = func([a, n], LetStmt(Var("y"), Add(n, c(1)), body), {a: A})
    text = script(f)
    assert '    A_flat = T.Buffer((256,), "float32", data=A.data)' in text.splitlines()
    assert structural_equal(parse(text), f)


# ----------------------------------------------------------------------------- highlight
def test_highlight_underlines_the_loop_line_and_the_expression():
    value = Add(BufferLoad(A, (i, j)), f32(1.0))
    inner = loop(j, 16, BufferStore(A, value, (i, j)), ForKind.VECTORIZED)
    outer = loop(i, 16, inner)
    assert script(outer, highlight=[inner, value.b]) == dedent("""
        for i in range(16):
            for j in T.vectorized(16):
            ^^^^^^^^^^^^^^^^^^^^^^^^^^
                A[i, j] = A[i, j] + T.float32(1.0)
                                    ^^^^^^^^^^^^^^
    """)


def test_highlight_underlines_the_block_line_and_grid_of_an_inner_loop():
    _, nest = _matmul_block()
    block = nest.body.body.body.block
    lines = script(nest, highlight=[nest.body, block]).splitlines()
    assert lines[:4] == [
        "for i, j, k in T.grid(16, 16, 16):",
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '    with T.block("C"):',
        "    ^^^^^^^^^^^^^^^^^^",
    ]


def test_printing_without_highlight_has_no_caret_lines_and_is_deterministic():
    _, nest = _matmul_block()
    assert "^" not in script(nest)
    assert script(nest) == script(nest)


def test_str_of_a_node_is_its_script():
    assert str(Add(i, c(1))) == "i + 1"
    assert str(BufferRegion(A, (Range(i, c(1)), Range(c(0), c(16))))) == "A[i, 0:16]"
    assert str(A) == 'A = T.Buffer((16, 16), "float32")'
