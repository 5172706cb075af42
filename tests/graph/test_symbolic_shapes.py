"""Symbolic dimensions at the graph level: tensor types over shape symbols, their text form,
type relations that compute output shapes as expressions, and the evaluator running one
symbolic program at many sizes.

The relations' law: typing a call on symbolic shapes and then giving the symbols sizes is the
same as typing the call on those sizes (substitution commutes with type inference)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith.dims import (
    any_dim,
    bind_shape,
    dim_text,
    dims_differ,
    dims_equal,
    evaluate_dim,
    shape_symbols,
    symbol,
)
from tessel.graph import Function, TensorType, TupleType, Var, astext, parse
from tessel.graph.evaluate import evaluate
from tessel.graph.executor import compile as graph_compile
from tessel.graph.op import get_op
from tessel.graph.op.op_def import OpTypeError
from tessel.graph.passes.infer_type import InferType
from tessel.ir import assert_structural_equal
from tessel.ir.expr import PrimExpr
from tessel.ir.module import IRModule
from tessel.ir.transform import PassContext
from tessel.support.errors import IRTypeError

N, S = symbol("n"), symbol("s")

# --- types and the dimension algebra -----------------------------------------------------------


def test_tensor_type_takes_symbols_and_folds_constant_expressions():
    ty = TensorType((N, S * 2, symbol("k") * 0 + 3))
    assert ty.shape[0] is N
    assert dim_text(ty.shape[1]) == "s * 2"
    assert ty.shape[2] == 3 and isinstance(ty.shape[2], int)
    assert not ty.is_static
    assert TensorType((1, 3)).is_static


@pytest.mark.parametrize("shape", [(1.5,), (True,), (-1,), ("n",)])
def test_tensor_type_refuses_what_is_not_a_dimension(shape):
    with pytest.raises(IRTypeError):
        TensorType(shape)


def test_dims_are_equal_only_when_proved():
    assert dims_equal(N * S * 4, S * 2 * N * 2)
    assert not dims_equal(N, S)  # may be equal at run time, but not proved
    assert not dims_differ(N, S)
    assert dims_differ(N + 1, N)
    assert evaluate_dim((N + S) * 2, {N: 3, S: 4}) == 14


def test_bind_shape_names_the_input_and_axis_on_a_mismatch():
    sizes = {}
    bind_shape((N, S), (2, 7), sizes, "input `a`")
    assert sizes == {N: 2, S: 7}
    with pytest.raises(ValueError, match=r"input `b`: axis 0 is `n`, which is 2 in an earlier"):
        bind_shape((N, 3), (4, 3), sizes, "input `b`")
    with pytest.raises(ValueError, match=r"input `c`: axis 1 must be 3"):
        bind_shape((N, 3), (2, 5), sizes, "input `c`")
    with pytest.raises(ValueError, match=r"input `d`: expected rank 2"):
        bind_shape((N, 3), (2,), sizes, "input `d`")


# --- text ----------------------------------------------------------------------------------------


def test_symbolic_types_print_and_parse_back_with_one_symbol_per_name():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq, 4), float32], %y: Tensor[(batch, ?, seq * 2 + 1, floordiv(seq, 2)), float32]) -> Tensor[(batch, seq, 4), float32] {
  %x
}
"""
    mod = parse(text)
    x, y = mod["main"].params
    assert x.type_annotation.shape[0] is y.type_annotation.shape[0]  # `batch` is one symbol
    assert astext(mod) == text
    assert_structural_equal(parse(astext(mod)), mod)


def test_each_question_mark_is_its_own_dimension():
    mod = parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 3), float32], %y: Tensor[(?, 3), float32]) { %x }"""
    )
    x, y = mod["main"].params
    assert x.type_annotation.shape[0] is not y.type_annotation.shape[0]


def test_two_symbols_of_one_name_print_apart():
    a, b = symbol("n"), symbol("n")
    x = Var("x", TensorType((a, 2)))
    y = Var("y", TensorType((b, 2)))
    mod = IRModule.from_dict({"main": Function((x, y), x)})
    printed = astext(mod)
    assert "Tensor[(n, 2), float32]" in printed and "Tensor[(n_1, 2), float32]" in printed
    assert_structural_equal(parse(printed), mod)


# --- type relations ------------------------------------------------------------------------------

# (operator, argument shapes over n and s, attributes); a list of shapes is a tuple argument.
SYMBOLIC_CALLS = [
    ("add", [(N, S, 4), (S, 1)], {}),
    ("multiply", [(N, 1, 1, S), (N, 4, S, S)], {}),
    ("where", [(N, 1), (N, S), (1, S)], {}),
    ("reshape", [(N, S, 4)], {"newshape": [-1, 4]}),
    ("reshape", [(N, S, 4)], {"newshape": [0, 0, 2, 2]}),
    ("reshape", [(N, S, 4)], {"newshape": [0, -1]}),
    ("reshape", [(N, S, 4)], {"newshape": [-3, 4]}),
    ("reshape", [(N, S, 6)], {"newshape": [0, 0, -4, 2, -1]}),
    ("transpose", [(N, S, 4)], {"axes": [0, 2, 1]}),
    ("expand_dims", [(N, S)], {"axis": 1, "num_newaxis": 2}),
    ("squeeze", [(N, 1, S)], {"axis": [1]}),
    ("concatenate", [[(N, 3), (N, S)]], {"axis": 1}),
    ("strided_slice", [(N, S)], {"begin": [1], "end": [-1]}),
    ("strided_slice", [(N, S, 5)], {"begin": [0, 2], "end": [N, S], "strides": [1, 2]}),
    ("strided_slice", [(20, 4)], {"begin": [0], "end": [S], "axes": [0]}),
    ("strided_slice", [(N, S)], {"begin": [0, 1], "end": [2**63 - 1, 2**63 - 1]}),
    ("nn.dense", [(N, S, 4), (8, 4)], {}),
    ("nn.matmul", [(N, 4), (4, 8)], {}),
    ("nn.batch_matmul", [(N, S, 4), (N, 8, 4)], {}),
    ("nn.batch_matmul", [(N, S, 4), (N, S, 4)], {"transpose_a": True, "transpose_b": False}),
    ("nn.bias_add", [(N, 4, S), (4,)], {"axis": 1}),
    ("nn.batch_flatten", [(N, 3, S)], {}),
    ("nn.softmax", [(N, S)], {"axis": -1}),
    ("nn.layer_norm", [(N, S, 4), (4,), (4,)], {"axis": -1}),
    ("sum", [(N, S, 4)], {"axis": [1]}),
    ("mean", [(N, S, 4)], {"axis": [1], "keepdims": True}),
    ("max", [(N, S, 4)], {}),
    ("nn.conv2d", [(N, 3, S, S + 1), (8, 3, 3, 3)], {"padding": [1, 1], "strides": [2, 2]}),
    ("nn.max_pool2d", [(N, 3, S, S)], {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1]}),
    ("nn.avg_pool2d", [(N, 3, S, S)], {"pool_size": [2, 2], "strides": [2, 2], "ceil_mode": True}),
    ("nn.global_avg_pool2d", [(N, 3, S, S)], {}),
    ("cast", [(N, S)], {"dtype": "int32"}),
    ("erf", [(N, S)], {}),
]
INDEX_ARGUMENTS = {("take", 1)}


def _arg_type(name, position, shape):
    if isinstance(shape, list):
        return TupleType(tuple(TensorType(s) for s in shape))
    return TensorType(shape, "int64" if (name, position) in INDEX_ARGUMENTS else "float32")


def _sized(shape, sizes):
    if isinstance(shape, list):
        return [_sized(s, sizes) for s in shape]
    return tuple(evaluate_dim(d, sizes) for d in shape)


SYMBOLIC_CALLS += [
    ("take", [(30, 4), (N, S)], {"axis": 0}),
    ("take", [(N, S, 4), (3,)], {"axis": 1}),
]


@pytest.mark.parametrize(
    ("name", "shapes", "attrs"),
    SYMBOLIC_CALLS,
    ids=[f"{c[0]}-{k}" for k, c in enumerate(SYMBOLIC_CALLS)],
)
@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 9), s=st.integers(3, 12))
def test_typing_then_sizing_equals_sizing_then_typing(name, shapes, attrs, n, s):
    op = get_op(name)
    symbolic = op.infer_type([_arg_type(name, k, x) for k, x in enumerate(shapes)], attrs)
    sizes = {N: n, S: s}
    sized_attrs = {
        key: [evaluate_dim(v, sizes) if isinstance(v, PrimExpr) else v for v in value]
        if isinstance(value, list)
        else value
        for key, value in attrs.items()
    }
    static = op.infer_type(
        [_arg_type(name, k, _sized(x, sizes)) for k, x in enumerate(shapes)], sized_attrs
    )
    assert symbolic.dtype == static.dtype
    assert tuple(evaluate_dim(d, sizes) for d in symbolic.shape) == static.shape


def test_broadcasting_symbols_not_proved_equal_is_refused():
    with pytest.raises(OpTypeError, match=r"dimension -1 is s against n"):
        get_op("add").infer_type([TensorType((N,)), TensorType((S,))], {})


def test_a_reduction_over_a_symbol_against_a_static_size_is_refused():
    with pytest.raises(OpTypeError, match="reduces over 4 elements but `tensor_a` has s"):
        get_op("nn.matmul").infer_type([TensorType((N, S)), TensorType((4, 8))], {})


def test_an_operator_without_symbolic_relations_refuses_by_name():
    with pytest.raises(OpTypeError, match=r"nn.pad: argument `data` has symbolic shape") as info:
        get_op("nn.pad").infer_type(
            [TensorType((N, 3)), TensorType((), "float32")], {"pad_width": [[0, 0], [1, 1]]}
        )
    assert info.value.rule == "graph.op-symbolic"


def test_reshape_infers_minus_one_without_dividing_by_a_symbol():
    ty = get_op("reshape").infer_type([TensorType((N, S, 4))], {"newshape": [0, -1]})
    assert dim_text(ty.shape[1]) == "s * 4"
    with pytest.raises(OpTypeError, match="cannot infer the -1"):
        get_op("reshape").infer_type([TensorType((N, S, 4))], {"newshape": [-1, 3]})


def test_question_mark_dimensions_are_never_equal_to_each_other():
    a, b = any_dim(), any_dim()
    with pytest.raises(OpTypeError):
        get_op("add").infer_type([TensorType((a,)), TensorType((b,))], {})
    assert shape_symbols([(a, b, a)]) == [a, b]


# --- evaluation and compilation ------------------------------------------------------------------

ENCODER_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq, 4), float32], %w: Tensor[(8, 4), float32],
          %mask: Tensor[(batch, seq), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.softmax(%0, axis=-1);
  %2 = reshape(%1, newshape=[0, -1]);
  %3 = reshape(%2, newshape=[0, -1, 8]);
  %4 = expand_dims(%mask, axis=2);
  %5 = multiply(%3, %4);
  sum(%5, axis=[1])
}
"""


def _reference(x, w, mask):
    scores = x @ w.T
    soft = np.exp(scores - scores.max(-1, keepdims=True))
    soft /= soft.sum(-1, keepdims=True)
    return (soft * mask[..., None]).sum(1)


def test_one_symbolic_program_evaluates_at_every_size():
    mod = InferType()(parse(ENCODER_TEXT), PassContext())
    assert astext(mod["main"].body.checked_type) == "Tensor[(batch, 8), float32]"
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype("float32")
    for batch, seq in [(1, 7), (4, 11), (3, 1)]:
        x = rng.standard_normal((batch, seq, 4)).astype("float32")
        mask = (rng.random((batch, seq)) > 0.3).astype("float32")
        out = evaluate(mod, x, w, mask)
        np.testing.assert_allclose(out, _reference(x, w, mask), rtol=1e-5, atol=1e-6)


def test_evaluating_with_inconsistent_sizes_names_the_input_and_axis():
    mod = parse(ENCODER_TEXT)
    w = np.zeros((8, 4), "float32")
    with pytest.raises(ValueError, match=r"input `mask`: axis 1 is `seq`, which is 3"):
        evaluate(mod, np.zeros((2, 3, 4), "float32"), w, np.zeros((2, 5), "float32"))
    with pytest.raises(ValueError, match=r"input `x`: axis 2 must be 4"):
        evaluate(mod, np.zeros((2, 3, 5), "float32"), w, np.zeros((2, 3), "float32"))


# --- compiled once ---------------------------------------------------------------------------------

# Symbolic rows only: kernels whose vector axis is symbolic (attention's seq x seq scores)
# compile to large C for now (docs/dynamic_shapes.md), too slow for a unit test.
ENCODER_BLOCK_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq, 8), float32], %w: Tensor[(8, 8), float32],
          %g: Tensor[(8,), float32], %b: Tensor[(8,), float32]) {
  %0 = reshape(%x, newshape=[-1, 8]);
  %1 = nn.dense(%0, %w);
  %2 = reshape(%1, newshape=[batch, seq, 8]);
  %3 = nn.softmax(%2, axis=-1);
  %4 = add(%3, %x);
  %5 = nn.layer_norm(%4, %g, %b, axis=-1);
  sum(%5, axis=[1])
}
"""


def test_a_symbolic_graph_compiles_once_and_runs_every_size():
    mod = parse(ENCODER_BLOCK_TEXT)
    model = graph_compile(mod, jobs=1, threads=1)
    assert model.executor == "aot" and model.threads == 1
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype("float32") for s in ((8, 8), (8,), (8,))]
    for batch, seq in [(1, 1), (2, 5), (3, 17)]:
        x = rng.standard_normal((batch, seq, 8)).astype("float32")
        np.testing.assert_allclose(
            model(x, *weights), evaluate(mod, x, *weights), rtol=1e-4, atol=1e-5
        )
    with pytest.raises(ValueError, match=r"input `x`: axis 2 must be 8"):
        model(np.zeros((1, 2, 7), "float32"), *weights)


def test_the_graph_passes_take_sizes_computed_at_run_time():
    # shape_to_tensor has no arguments: the rewrite rules, which match a call of its data,
    # leave it alone, and the pipeline keeps its value (the zoo's DistilBERT has one).
    from tessel.graph.passes.pipeline import default_pipeline

    mod = parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq), float32]) {
  %0 = shape_to_tensor(sizes=[seq], dtype="float32");
  %1 = reshape(%0, newshape=[1]);
  add(%x, %1)
}
"""
    )
    ctx = PassContext()
    passed = mod
    for graph_pass in default_pipeline(None, 1):
        passed = graph_pass(passed, ctx)
    x = np.zeros((2, 5), "float32")
    np.testing.assert_array_equal(evaluate(passed, x), evaluate(mod, x))
    np.testing.assert_array_equal(evaluate(passed, x), np.full((2, 5), 5, "float32"))
