"""A weight's name travels on its Constant (`name_hint`) from ONNX import through the graph
passes to the exported model: an initializer keeps its name, a weight folded or packed from it
is `<name>_folded` / `<name>_packed`, and the names never change what a program computes."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

from tessel.frontend.onnx import from_onnx
from tessel.graph import Call, Constant, Function, Op, TensorType, Var, evaluate
from tessel.graph import compile as compile_graph
from tessel.graph.executor import bind_params
from tessel.graph.expr import derived_name
from tessel.graph.passes.pipeline import default_pipeline
from tessel.graph.traversal import post_order_exprs
from tessel.ir import structural_equal
from tessel.ir.module import IRModule

W_NAME, B_NAME, W2_NAME = "enc.layer-0/W", "enc.layer-0/b", "2nd weight"  # not C identifiers


def _mlp():
    """y = relu(x @ W + b) @ W2, its initializers named as a real exporter names them."""
    rng = np.random.default_rng(0)
    weights = {W_NAME: rng.standard_normal((8, 4)), B_NAME: rng.standard_normal(4),
               W2_NAME: rng.standard_normal((4, 3))}  # fmt: skip
    weights = {k: v.astype("float32") for k, v in weights.items()}
    nodes = [
        helper.make_node("MatMul", ["x", W_NAME], ["m"]),
        helper.make_node("Add", ["m", B_NAME], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("MatMul", ["r", W2_NAME], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, weights


def _reference(weights, x):
    hidden = np.maximum(x @ weights[W_NAME] + weights[B_NAME], 0)
    return hidden @ weights[W2_NAME]


@pytest.mark.parametrize("freeze_params", [True, False])
def test_initializer_names_survive_import_passes_and_export(freeze_params, tmp_path):
    """Frozen (Constants named at import) or bound at compile (named after their parameters),
    the exported weights are the initializers' names: the bias as it is, the transposed and
    packed products' weights `<name>_folded_packed`; the model computes the same."""
    model, weights = _mlp()
    mod, params = from_onnx(model, freeze_params=freeze_params)
    compiled = compile_graph(mod, params)
    expected = [f"{W_NAME}_folded_packed", B_NAME, f"{W2_NAME}_folded_packed"]
    assert [p.name for p in compiled.aot.of_kind("weight")] == expected
    x = np.random.default_rng(1).standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(compiled(x), _reference(weights, x), rtol=1e-5, atol=1e-5)
    compiled.export(tmp_path)
    exported = load_file(str(tmp_path / "params.safetensors"))
    assert sorted(exported) == sorted(expected)
    np.testing.assert_array_equal(exported[B_NAME], weights[B_NAME])
    header = (tmp_path / "model.h").read_text()
    assert f'"{W2_NAME}_folded_packed"' in header  # a string literal, never a C identifier


def test_the_graph_passes_keep_or_derive_every_weight_name():
    """After the default pipeline every remaining tensor weight is named after an initializer
    (as it is, or `_folded`), and the values are the NumPy reference's."""
    model, weights = _mlp()
    mod, _ = from_onnx(model)
    for pass_ in default_pipeline():
        mod = pass_(mod)
    constants = [n for n in post_order_exprs(mod["main"]) if isinstance(n, Constant)]
    names = sorted(c.name_hint for c in constants if c.data.ndim > 0)
    assert names == sorted([f"{W_NAME}_folded", B_NAME, f"{W2_NAME}_folded"])
    x = np.random.default_rng(2).standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(evaluate(mod, x), _reference(weights, x), rtol=1e-5, atol=1e-5)


def test_bound_parameters_are_named_after_their_variables():
    x, w = Var("x", TensorType((2,), "float32")), Var("w", TensorType((2,), "float32"))
    mod = IRModule.from_dict({"main": Function((x, w), Call(Op("add"), (x, w)))})
    bound = bind_params(mod, {"w": np.ones(2, "float32")})
    (constant,) = [n for n in post_order_exprs(bound["main"]) if isinstance(n, Constant)]
    assert constant.name_hint == "w"


def test_name_hint_is_not_part_of_structural_equality():
    data = np.arange(3, dtype="float32")
    assert structural_equal(Constant(data, name_hint="a"), Constant(data, name_hint="b"))
    assert structural_equal(Constant(data, name_hint="a"), Constant(data))


def test_derived_names_follow_one_named_source():
    a, b = Constant(np.ones(1), name_hint="a"), Constant(np.ones(1), name_hint="b")
    unnamed = Constant(np.ones(1))
    assert derived_name((a, unnamed, a), "_folded") == "a_folded"
    assert derived_name((Constant(np.ones(1), name_hint="a_folded"),), "_folded") == "a_folded"
    assert derived_name((a, b), "_folded") == ""  # several weights combined: no one's name
    assert derived_name((unnamed,), "_packed") == ""
