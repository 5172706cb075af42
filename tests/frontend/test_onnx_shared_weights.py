"""A constant weight that many MatMuls or Gemms read (tied embeddings, GPT-2's lm_head tied to
wte) is transposed for nn.dense once at import and stays one weight of the compiled model."""

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx_testing import make_model, random_inputs, run_onnxruntime, tensor

from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph
from tessel.graph.expr import Call, Constant
from tessel.graph.traversal import post_order_exprs


def _three_matmuls_on_one_weight(op_type: str):
    """y = relu(relu(relu(x @ W) @ W) @ W), W one [8, 8] initializer (Gemm: also with a bias);
    the three products are one kernel, which packs the weight for itself (LayoutRewrite)."""
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((8, 8)) / np.sqrt(8)).astype("float32")
    inputs = ["W", "B"] if op_type == "Gemm" else ["W"]
    nodes, prev = [], "x"
    for k in range(3):
        nodes.append(helper.make_node(op_type, [prev, *inputs], [f"m{k}"]))
        nodes.append(helper.make_node("Relu", [f"m{k}"], [f"r{k}"]))
        prev = f"r{k}"
    initializers = {"W": weight}
    if op_type == "Gemm":
        initializers["B"] = rng.standard_normal(8).astype("float32")
    return make_model(nodes, [tensor("x", [2, 8])], [tensor("r2", [2, 8])], initializers)


def _dense_weights(mod):
    return [
        e.args[1]
        for e in post_order_exprs(mod["main"].body)
        if isinstance(e, Call) and e.op.name == "nn.dense"
    ]


@pytest.mark.parametrize("op_type", ["MatMul", "Gemm"])
def test_three_matmuls_on_one_initializer_share_one_transposed_weight(op_type):
    model = _three_matmuls_on_one_weight(op_type)
    mod, params = from_onnx(model)
    weights = _dense_weights(mod)
    assert len(weights) == 3
    assert all(w is weights[0] for w in weights)  # one Constant, transposed once
    assert isinstance(weights[0], Constant) and weights[0].name_hint == "W_folded"
    np.testing.assert_array_equal(weights[0].data, _initializer(model, "W").T)
    _check_one_weight(model, mod, params, op_type)


@pytest.mark.parametrize("op_type", ["MatMul", "Gemm"])
def test_an_unfrozen_initializer_is_transposed_once_too(op_type):
    model = _three_matmuls_on_one_weight(op_type)
    mod, params = from_onnx(model, freeze_params=False)
    weights = _dense_weights(mod)
    assert all(w is weights[0] for w in weights)  # one transpose call, folded once when bound
    assert isinstance(weights[0], Call) and weights[0].op.name == "transpose"
    _check_one_weight(model, mod, params, op_type)


def _check_one_weight(model, mod, params, op_type):
    """The compiled model holds W once (packed for the dense kernel), plus the Gemm's bias, and
    agrees with onnxruntime."""
    compiled = compile_graph(mod, params)
    assert len(compiled.plan.constants) == (2 if op_type == "Gemm" else 1)
    names = [p.name for p in compiled.aot.of_kind("weight")]
    assert names == (["W_folded_packed", "B"] if op_type == "Gemm" else ["W_folded_packed"])
    inputs = random_inputs(model)
    (expected,) = run_onnxruntime(model, inputs)
    np.testing.assert_allclose(compiled(**inputs), expected, rtol=1e-5, atol=1e-5)


def _initializer(model, name):
    (init,) = [i for i in model.graph.initializer if i.name == name]
    return numpy_helper.to_array(init)
