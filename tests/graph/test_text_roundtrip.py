"""The graph text format round-trips: parse -> print -> parse is structurally equal, printing is
a fixed point, and IR built in Python prints to text that parses back equal.

The corpus (corpus/*.relay) holds Relay programs as TVM users write or print them.
"""

from pathlib import Path

import numpy as np
import pytest

from tessel.graph import (
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    IncompleteType,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    astext,
    const,
    parse,
    parse_expr,
    with_type,
)
from tessel.graph.text import pretty_print
from tessel.ir import assert_structural_equal
from tessel.ir.module import IRModule
from tessel.ir.structural import structural_equal

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.relay"))


def _roundtrip_module(mod: IRModule) -> str:
    text = astext(mod)
    reparsed = parse(text, source_name="<printed>")
    assert_structural_equal(reparsed, mod)
    assert astext(reparsed) == text, "the printed text is not a fixed point of parse + print"
    return text


def _roundtrip_expr(expr):
    text = astext(expr)
    reparsed = parse_expr(text, source_name="<printed>")
    assert_structural_equal(reparsed, expr)
    assert astext(reparsed) == text
    return text


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_program_roundtrips(path):
    mod = parse(path.read_text(), source_name=str(path))
    _roundtrip_module(mod)


def test_corpus_holds_at_least_forty_distinct_programs():
    texts = {path.read_text() for path in CORPUS}
    assert len(texts) == len(CORPUS) >= 40


# What the printed corpus must exercise, each at least once.
CONSTRUCTS = [
    '#[version = "0.0.5"]',
    "def @",
    "-> Tensor[(",
    "Tensor[(1), float32]",
    "%0 = ",
    "let %",
    "if (",
    "} else {",
    "fn (",
    "Primitive=1",
    "relay.reshape_only=1",
    "(%a,)",
    "()",
    "%t.0",
    ".1",
    "meta[relay.Constant][0]",
    "#[metadata]",
    "padding=[1, 1, 1, 1]",
    "epsilon=1e-05f",
    'data_layout="NCHW"',
    "units=None",
    "center=True",
    "nested=[[1, 2], [3]]",
    "2i64",
    "1f16",
    "0.5f64",
    "-1.5f",
    "True",
    "@square(%",
    "fn (%g)",
    "fn (Tensor[(1), float32]) -> ",
    "(Tensor[(1), float32], int32)",
    "%x: _",
    "free_var",
]


def test_printed_corpus_covers_every_construct():
    printed = "\n".join(astext(parse(p.read_text())) for p in CORPUS)
    printed += astext(Call(Op("f"), [Var("x", TensorType((), "int64"))]))
    missing = [c for c in CONSTRUCTS if c not in printed]
    assert not missing, missing


# -- the DAG survives: shared subexpressions print once and come back shared -----------------


def test_shared_subexpression_is_one_object_after_parsing():
    mod = parse(
        """
        #[version = "0.0.5"]
        def @main(%x: Tensor[(4), float32]) {
          %0 = nn.relu(%x);
          add(%0, %0)
        }
        """
    )
    body = mod["main"].body
    assert isinstance(body, Call)
    assert body.args[0] is body.args[1]


def test_printer_names_shared_nodes_once():
    x = Var("x", TensorType((2,), "float32"))
    shared = Call(Op("exp"), [x])
    body = Call(Op("add"), [Call(Op("log"), [shared]), shared])
    text = astext(IRModule.from_dict({"main": Function([x], body)}))
    assert text.count("exp(%x)") == 1
    reparsed = parse(text)["main"].body
    assert reparsed.args[0].args[0] is reparsed.args[1]


def test_node_shared_by_two_scopes_prints_once_in_their_common_block():
    x, c = Var("x", TensorType((2,), "float32")), Var("c", TensorType((), "bool"))
    p = Var("p")
    closure = Function([p], Call(Op("add"), [p, x]))
    branchy = If(c, Call(closure, [x]), Call(closure, [Call(closure, [x])]))
    func = Function([x, c], Tuple([branchy, closure]))
    text = _roundtrip_module(IRModule.from_dict({"main": func}))
    assert text.count("fn (%p)") == 1


def test_node_shared_by_both_branches_only_is_hoisted_above_the_if():
    x, c = Var("x"), Var("c")
    inner = Function([Var("q")], const(1.0))
    both = Call(inner, [x])
    func = Function([x, c], If(c, Call(Op("exp"), [both]), Call(Op("log"), [both])))
    text = _roundtrip_module(IRModule.from_dict({"main": func}))
    assert text.count("fn (%q)") == 1


# -- IR built in Python ------------------------------------------------------------------------


def _f32(*shape):
    return TensorType(shape, "float32")


def _built_programs():
    x, w = Var("x", _f32(1, 3)), Var("w", _f32(4, 3))
    dense = Function(
        [x, w], Call(Op("nn.relu"), [Call(Op("nn.dense"), [x, w], {"units": 4})]), _f32(1, 4)
    )
    yield "dense", IRModule.from_dict({"main": dense})

    # a function returning a function that captures the outer parameter
    a, b = Var("a", _f32(2)), Var("b", _f32(2))
    inner = Function([b], Call(Op("multiply"), [a, b]), _f32(2))
    outer = Function([a], inner, FuncType((_f32(2),), _f32(2)))
    yield "closure", IRModule.from_dict({"main": outer})

    # a higher-order parameter and a call through it
    f = Var("f", FuncType((_f32(2),), _f32(2)))
    v = Var("v", _f32(2))
    yield "higher_order", IRModule.from_dict({"main": Function([f, v], Call(f, [Call(f, [v])]))})

    # let, if, tuples and projections
    y, c = Var("y"), Var("c", TensorType((), "bool"))
    t = Tuple([y, Call(Op("exp"), [y])])
    body = Let(y, const(2.0), If(c, TupleGetItem(t, 1), TupleGetItem(Tuple([y]), 0)))
    yield "let_if_tuple", IRModule.from_dict({"main": Function([c], body)})

    # tensor constants through the metadata table, one shared
    weight = Constant(np.arange(12, dtype="float32").reshape(4, 3))
    p = Var("p", _f32(1, 3))
    use = Call(
        Op("add"), [Call(Op("nn.dense"), [p, weight]), Call(Op("sum"), [weight], {"axis": [1]})]
    )
    yield "meta", IRModule.from_dict({"main": Function([p], use)})

    # every kind of attribute, and function attributes
    q = Var("q", _f32(1, 3, 8, 8))
    k = Var("k", _f32(8, 3, 3, 3))
    conv = Call(
        Op("nn.conv2d"),
        [q, k],
        {
            "padding": (1, 1, 1, 1),
            "channels": 8,
            "kernel_size": (3, 3),
            "data_layout": "NCHW",
            "groups": 1,
            "out_dtype": "",
            "scale": 0.5,
            "flag": False,
            "nothing": None,
            "nested": ((1, 2), (3,)),
            "eps": 1e-5,
            "neg": -3,
        },
    )
    p0, p1 = Var("p0", _f32(1, 3, 8, 8)), Var("p1", _f32(8, 3, 3, 3))
    fused = Function(
        [p0, p1],
        Call(Op("nn.relu"), [Call(Op("nn.conv2d"), [p0, p1], conv.attrs)]),
        attrs={"Primitive": 1, "Composite": "conv_relu", "relay.reshape_only": 1},
    )
    yield (
        "attrs",
        IRModule.from_dict({"main": Function([q, k], Tuple([conv, Call(fused, [q, k])]))}),
    )

    # several definitions calling each other, one recursively
    n = Var("n", TensorType((), "int32"))
    count = GlobalVar("count")
    recursive = Function(
        [n],
        If(Call(Op("less"), [n, const(1)]), n, Call(count, [Call(Op("subtract"), [n, const(1)])])),
    )
    m = Var("m", TensorType((), "int32"))
    yield "defs", IRModule({count: recursive, GlobalVar("main"): Function([m], Call(count, [m]))})

    # scalars of every suffix
    scalars = [
        const(1.0),
        const(2, "int64"),
        const(3),
        const(True),
        const(-1.5),
        const(1.0, "float16"),
        const(0.5, "float64"),
        const(7, "int8"),
        const(255, "uint8"),
        const(1e-5),
        const(0.1),
    ]
    yield "scalars", IRModule.from_dict({"main": Function([], Tuple(scalars))})

    # unannotated and incomplete parameters
    g, h = Var("g"), Var("h", IncompleteType())
    yield "unannotated", IRModule.from_dict({"main": Function([g, h], Call(g, [h]))})

    # a let in operand position, a call of a function literal, an empty tuple
    z = Var("z", _f32(3))
    lit = Function([Var("u", _f32(3))], Tuple([]))
    s = Var("s")
    inner_let = Let(s, Call(Op("exp"), [z]), s)
    yield (
        "odd_positions",
        IRModule.from_dict({"main": Function([z], Tuple([Call(lit, [z]), inner_let]))}),
    )


@pytest.mark.parametrize(
    ("name", "mod"), list(_built_programs()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_built_ir_prints_and_parses_back_equal(name, mod):
    _roundtrip_module(mod)


def test_typed_ir_prints_ty_comments_that_the_parser_ignores():
    x = Var("x", _f32(2))
    call = with_type(Call(Op("exp"), [x]), _f32(2))
    mod = IRModule.from_dict({"main": Function([x], Call(Op("log"), [call]))})
    text = astext(mod, show_types=True)
    assert "exp(%x) /* ty=Tensor[(2), float32] */;" in text
    assert_structural_equal(parse(text), mod)


def test_types_print_as_relay_does():
    assert pretty_print(_f32(1, 3)) == "Tensor[(1, 3), float32]"
    assert pretty_print(_f32(1)) == "Tensor[(1), float32]"
    assert pretty_print(TensorType((), "int64")) == "int64"
    assert pretty_print(TupleType((_f32(1),))) == "(Tensor[(1), float32],)"
    assert (
        pretty_print(FuncType((_f32(1),), _f32(1)))
        == "fn (Tensor[(1), float32]) -> Tensor[(1), float32]"
    )


@pytest.mark.parametrize(
    ("literal", "dtype", "value"),
    [
        ("1f", "float32", 1.0),
        ("2i64", "int64", 2),
        ("3", "int32", 3),
        ("True", "bool", True),
        ("-1.5f", "float32", -1.5),
        ("1f16", "float16", 1.0),
        ("0.5bf16", "bfloat16", 0.5),
        ("-infbf16", "bfloat16", -np.inf),
        ("0.5f64", "float64", 0.5),
        ("-42i16", "int16", -42),
        ("-42i", "int32", -42),
        ("2147483648", "int64", 2147483648),
        ("1e-05f", "float32", 1e-05),
        ("3f32", "float32", 3.0),
        ("7u8", "uint8", 7),
    ],
)
def test_scalar_literals_follow_relay(literal, dtype, value):
    constant = parse_expr(literal)
    assert isinstance(constant, Constant)
    assert str(constant.data.dtype) == dtype
    assert constant.data.ndim == 0
    assert constant.data.item() == pytest.approx(value)
    assert_structural_equal(parse_expr(astext(constant)), constant)


def test_float_constants_roundtrip_exactly():
    rng = np.random.default_rng(1)
    for dtype, exponent in (("float16", 3), ("float32", 30), ("float64", 300), ("bfloat16", 30)):
        scale = 10.0 ** rng.integers(-exponent, exponent, 50)
        values = (rng.standard_normal(50) * scale).astype(dtype)
        tup = Tuple([Constant(np.asarray(v, dtype=dtype)) for v in values])
        assert structural_equal(parse_expr(astext(tup)), tup), dtype


def test_bfloat16_constants_print_few_digits_and_roundtrip_through_the_metadata():
    tup = Tuple(
        [
            Constant(np.asarray(0.1, "bfloat16")),
            Constant(np.array([[1.5, -np.inf], [np.nan, 3e38]], "bfloat16")),
        ]
    )
    text = astext(tup)
    assert "0.1bf16" in text  # not ml_dtypes' 0.100098
    assert '"dtype": "bfloat16"' in text
    assert structural_equal(parse_expr(text), tup)


def test_meta_reference_uses_the_init_meta_table():
    text = """
    #[version = "0.0.5"]
    def @main(%x: Tensor[(2, 3), float32]) {
      add(%x, meta[relay.Constant][0])
    }
    """
    data = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    for entry in (data, Constant(data)):
        mod = parse(text, init_meta_table={"relay.Constant": [entry]})
        np.testing.assert_array_equal(mod["main"].body.args[1].data, data)
    printed = astext(mod, show_meta_data=False)
    assert "#[metadata]" not in printed
    assert_structural_equal(parse(printed, init_meta_table={"relay.Constant": [data]}), mod)


def test_meta_constant_shared_twice_comes_back_as_one_object():
    c = Constant(np.ones((2, 2), "float32"))
    x = Var("x", _f32(2, 2))
    mod = IRModule.from_dict({"main": Function([x], Call(Op("add"), [Call(Op("add"), [x, c]), c]))})
    body = parse(astext(mod))["main"].body
    assert body.args[1] is body.args[0].args[1]


def test_parse_expr_with_free_vars_roundtrips():
    x, y = Var("x", _f32(2)), Var("y")
    expr = Call(Op("add"), [Call(Op("exp"), [x]), y])
    text = _roundtrip_expr(expr)
    assert "free_var %x: Tensor[(2), float32];" in text
    assert "free_var %y;" in text


def test_parse_expr_of_a_function_value():
    func = parse_expr(
        "fn (%p0: Tensor[(1), float32], %p1, Primitive=1) -> Tensor[(1), float32] { add(%p0, %p1) }"
    )
    assert isinstance(func, Function)
    assert func.params[1].type_annotation is None
    assert dict(func.attrs) == {"Primitive": 1}
    _roundtrip_expr(func)


def test_sequence_and_graph_binding_forms():
    seq = parse_expr("free_var %x: float32; debug(%x); %x")
    assert isinstance(seq, Let)
    assert seq.var.name_hint == "_"
    graph = parse_expr("%0 = (); %1 = 1; (%0, %0, %1)")
    assert isinstance(graph, Tuple)
    assert graph.fields[0] is graph.fields[1]


def test_str_of_graph_nodes_and_modules_is_the_text_format():
    x = Var("x", _f32(1))
    func = Function([x], Call(Op("nn.relu"), [x]))
    assert str(func) == "fn (%x: Tensor[(1), float32]) {\n  nn.relu(%x)\n}"
    mod = IRModule.from_dict({"main": func})
    assert str(mod).startswith("def @main(%x: Tensor[(1), float32]) {")
    assert str(TensorType((1, 3), "float32")) == "Tensor[(1, 3), float32]"


def test_module_with_a_primfunc_keeps_it_through_init_module():
    from tessel.script import parse as parse_script

    prim = parse_script(
        """
        from tessel.script import tir as T

        @T.prim_func
        def add_one(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                b[i] = a[i] + T.float32(1)
        """
    )
    prim = prim if not isinstance(prim, IRModule) else prim["add_one"]
    kernel = GlobalVar("add_one")
    x = Var("x", _f32(4))
    mod = IRModule({kernel: prim, GlobalVar("main"): Function([x], Call(kernel, [x]))})
    text = astext(mod)
    assert "// @add_one is a PrimFunc" in text
    reparsed = parse(text, init_module=IRModule({kernel: prim}))
    assert_structural_equal(reparsed, mod)


def test_deep_chain_prints_and_parses_without_recursion_errors():
    x = Var("x", _f32(4))
    expr = x
    for _ in range(3000):
        expr = Call(Op("nn.relu"), [expr])
    mod = IRModule.from_dict({"main": Function([x], expr)})
    text = astext(mod)
    assert text.count("\n") > 3000
    assert isinstance(parse(text)["main"].body, Call)
