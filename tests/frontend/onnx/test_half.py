"""float16 models: tensors stored as float16, arithmetic in float32 (tessel.frontend.onnx.half),
compiled to C and compared with onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from onnx_testing import check_against_onnxruntime, make_model, tensor

from tessel.frontend.onnx import from_onnx
from tessel.graph.executor import compile as compile_graph

HALF = TensorProto.FLOAT16


def _mlp_model():
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),  # runs on float16 itself
        helper.make_node("Softmax", ["t"], ["y"], axis=-1),
    ]
    weights = {
        "w": np.linspace(-1, 1, 8 * 6).reshape(8, 6).astype(np.float16),
        "b": np.linspace(-0.5, 0.5, 6).astype(np.float16),
    }
    return make_model(nodes, [tensor("x", [4, 8], HALF)], [tensor("y", None, HALF)], weights)


def test_float16_model_matches_onnxruntime_in_c():
    check_against_onnxruntime(_mlp_model(), rtol=2e-3, compiled=True)


def test_float16_tensors_stay_float16_between_nodes():
    mod, _ = from_onnx(_mlp_model())
    main = mod["main"]
    assert main.params[0].type_annotation.dtype == "float16"
    assert main.ret_type.dtype == "float16"
    text = str(main)
    assert "float32" in text  # computed wide,
    assert "float16" in text  # stored half


def test_float16_cast_round_trips_in_c_exactly():
    # Vectorized: gcc 12 at -O3 drops a float -> half -> float round trip written per lane.
    node = helper.make_node("Cast", ["x"], ["y"], to=HALF)
    back = helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT)
    model = make_model([node, back], [tensor("x", [3, 37])], [tensor("z", None)])
    x = np.random.default_rng(0).standard_normal((3, 37)).astype(np.float32) * 1000
    x[0, :4] = [65504.0, 1e-8, -0.0, 70000.0]  # largest half, underflow, signed zero, overflow
    mod, params = from_onnx(model)
    z = compile_graph(mod, params)(x)
    with np.errstate(over="ignore"):  # 70000 overflows to inf, as the cast must
        expected = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(z, expected)


def test_float16_scan_keeps_its_outputs_float16():
    # A node with a subgraph is not widened as a whole: its body's nodes are, one by one.
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s", "x"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["y"]),
        ],
        "body",
        [tensor("s", [3], HALF), tensor("x", [3], HALF)],
        [tensor("s_out", [3], HALF), tensor("y", [3], HALF)],
    )
    scan = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1)
    model = make_model(
        [scan],
        [tensor("init", [3], HALF), tensor("xs", [4, 3], HALF)],
        [tensor("final", [3], HALF), tensor("ys", [4, 3], HALF)],
        opset=16,
    )
    mod, _ = from_onnx(model)
    assert [t.dtype for t in mod["main"].ret_type.fields] == ["float16", "float16"]
    check_against_onnxruntime(model, rtol=2e-3, compiled=True)
