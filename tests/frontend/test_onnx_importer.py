"""from_onnx itself: inputs, parameters, shapes, folding of shape subgraphs, and errors."""

import numpy as np
import pytest
from onnx import helper
from onnx_testing import (
    INT64,
    calls,
    check_against_onnxruntime,
    evaluate_main,
    make_model,
    single_op_model,
    tensor,
)

from tessel.frontend.onnx import (
    OnnxImportError,
    UnsupportedOperatorError,
    from_onnx,
    supported_operators,
)
from tessel.graph.expr import Constant, Tuple, Var


def _mlp(dims=("batch", 4)):
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((4, 8)).astype("float32"),
        "b1": rng.standard_normal(8).astype("float32"),
        "w2": rng.standard_normal((8, 3)).astype("float32"),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Gemm", ["r", "w2"], ["y"]),
    ]
    return make_model(nodes, [tensor("x", dims)], [tensor("y", (dims[0], 3))], weights)


def test_inputs_become_parameters_and_initializers_constants():
    mod, params = from_onnx(_mlp((2, 4)))
    main = mod["main"]
    assert params == {}
    assert [p.name_hint for p in main.params] == ["x"]
    assert main.params[0].type_annotation.shape == (2, 4)
    assert calls(mod) == ["nn.dense", "add", "nn.relu", "nn.dense"]
    assert main.ret_type.shape == (2, 3)


def test_dynamic_dimension_needs_a_shape():
    with pytest.raises(OnnxImportError, match=r"`x` has dynamic dimension 0 \(`batch`\)") as info:
        from_onnx(_mlp())
    assert "shape={'x': (1, 4)}" in info.value.hint
    mod, _ = from_onnx(_mlp(), shape={"x": (5, 4)})
    assert mod["main"].params[0].type_annotation.shape == (5, 4)


def test_shape_errors_name_the_input():
    with pytest.raises(OnnxImportError, match="not inputs of the graph"):
        from_onnx(_mlp(), shape={"x": (1, 4), "z": (1,)})
    with pytest.raises(OnnxImportError, match="has rank 3"):
        from_onnx(_mlp(), shape={"x": (1, 4, 1)})
    with pytest.raises(OnnxImportError, match="differs from the model's static shape"):
        from_onnx(_mlp((2, 4)), shape={"x": (2, 5)})


def test_unfrozen_float_initializers_become_parameters():
    model = _mlp((2, 4))
    mod, params = from_onnx(model, freeze_params=False)
    names = [p.name_hint for p in mod["main"].params]
    assert names == ["x", "w1", "b1", "w2"]
    assert set(params) == {"w1", "b1", "w2"}
    np.testing.assert_array_equal(params["w1"], helper_array(model, "w1"))
    check_against_onnxruntime(model, freeze_params=False)


def helper_array(model, name):
    from onnx import numpy_helper

    return next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == name)


def test_mlp_matches_onnxruntime():
    check_against_onnxruntime(_mlp(), shape={"x": (3, 4)})


def test_shape_subgraph_folds_to_constants():
    # y = reshape(x, [shape(x)[0], -1]) computed the way exporters write it.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("", INT64, [], [0])),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
        helper.make_node("Cast", ["target"], ["target64"], to=INT64),
        helper.make_node("Reshape", ["x", "target64"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", ("b", 2, 3))],
        [tensor("y", ("b", 6))],
        {"axes": np.array([0]), "minus_one": np.array([-1])},
    )
    mod = check_against_onnxruntime(model, shape={"x": (4, 2, 3)})
    assert calls(mod) == ["reshape"]
    assert dict(mod["main"].body.attrs) == {"newshape": (4, 6)}


def test_constant_of_shape_range_and_expand_fold():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node(
            "ConstantOfShape", ["s"], ["ones"], value=helper.make_tensor("", 1, [1], [1.0])
        ),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=1),
        helper.make_node("Mul", ["ones", "rf"], ["grid"]),
        helper.make_node("Add", ["x", "grid"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", (2, 5))],
        [tensor("y", (2, 5))],
        {"start": np.array(1), "limit": np.array(11), "delta": np.array(2)},
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["add"]
    grid = mod["main"].body.args[1]
    assert isinstance(grid, Constant)
    np.testing.assert_array_equal(grid.data, np.tile(np.arange(1, 11, 2), (2, 1)))


def test_multiple_outputs_make_a_tuple():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])]
    model = make_model(nodes, [tensor("x", (3,))], [tensor("a", (3,)), tensor("b", (3,))])
    mod = check_against_onnxruntime(model)
    assert isinstance(mod["main"].body, Tuple)


def test_constant_node_output():
    value = helper.make_tensor("", 1, [2], [1.5, -2.0])
    nodes = [
        helper.make_node("Constant", [], ["c"], value=value),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    model = make_model(nodes, [tensor("x", (2,))], [tensor("y", (2,))])
    mod = check_against_onnxruntime(model)
    np.testing.assert_array_equal(mod["main"].body.args[1].data, [1.5, -2.0])
    floats = make_model(
        [helper.make_node("Constant", [], ["y"], value_floats=[1.0, 2.0])], [], [tensor("y", (2,))]
    )
    mod, _ = from_onnx(floats)
    assert mod["main"].body.data.dtype == np.float32
    np.testing.assert_array_equal(evaluate_main(mod, {})[0], [1.0, 2.0])


def test_graph_output_that_is_an_input():
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])], [tensor("x", (2,))], [tensor("y", (2,))]
    )
    mod, _ = from_onnx(model)
    assert isinstance(mod["main"].body, Var)


def test_every_unsupported_operator_is_reported_at_once():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Scatter", ["a"], ["nz"], name="nz1"),  # deprecated from opset 11
        helper.make_node("Relu", ["a"], ["b"], name="relu2"),
        helper.make_node("Scatter", ["b"], ["nz2"], name="nz2"),
        helper.make_node("MaxRoiPool", ["b", "k"], ["v"], name="top", pooled_shape=[1, 1]),
        helper.make_node("Custom", ["b"], ["c"], name="custom", domain="com.example"),
        helper.make_node("Reshape", ["x", "no_such_tensor"], ["never"], name="broken"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [tensor("x", (4,))],
        [tensor("c", (4,))],
        [helper.make_tensor("k", INT64, [1], [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    )
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    message = str(info.value)
    assert "3 operators" in message
    assert (
        "Scatter (opset 13; Tessel imports Scatter in opsets 9-10): nodes `nz1`, `nz2`" in message
    )
    assert "MaxRoiPool (opset 13): node `top`" in message
    assert "Custom (domain com.example, opset 1): node `custom`" in message
    unsupported = {u.op_type for u in info.value.unsupported}
    assert unsupported == {"Scatter", "MaxRoiPool", "Custom"}
    assert info.value.rule == "onnx.unsupported-operator"


def test_opsets_outside_the_table_are_unsupported():
    model = single_op_model("HardSwish", {"x": (2,)}, opset=14)
    from_onnx(model)
    old = single_op_model("Clip", {"x": (2,)}, opset=9, min=0.0, max=1.0)
    with pytest.raises(
        UnsupportedOperatorError,
        match=r"Clip \(opset 9; Tessel imports Clip in opsets 11-28\): node `Clip#0`",
    ):
        from_onnx(old)


def test_supported_operators_lists_opset_ranges():
    table = supported_operators()
    assert table["Softmax"] == (7, 28)
    assert table["LayerNormalization"] == (17, 28)  # entries start where ONNX defines the op
    assert {"Conv", "Gemm", "MatMul", "Slice", "Gather", "Pad", "Clip"} <= set(table)


def test_unnamed_tensor_error_names_the_node():
    node = helper.make_node("Add", ["x", "missing"], ["y"], name="adder")
    graph = helper.make_graph([node], "g", [tensor("x", (2,))], [tensor("y", (2,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match="Add node `adder` read tensor `missing`"):
        from_onnx(model)


def test_reshape_target_from_the_graph_is_rejected():
    nodes = [helper.make_node("Reshape", ["x", "t"], ["y"], name="r")]
    model = make_model(
        nodes, [tensor("x", (2, 3)), tensor("t", (2,), INT64)], [tensor("y", (3, 2))]
    )
    with pytest.raises(OnnxImportError, match="(target shape|static shape)"):
        from_onnx(model)


def test_model_from_a_file(tmp_path):
    import onnx

    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp((1, 4)), str(path))
    mod, _ = from_onnx(path)
    assert calls(mod)[-1] == "nn.dense"
