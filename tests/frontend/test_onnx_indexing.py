"""Indexing and selection converters: Scatter (opsets 9-10), TopK, ReverseSequence,
TensorScatter, and the value-dependent NonZero, Compress, Unique and NonMaxSuppression (folded
when known at import, else a ValueNeededError naming the graph inputs to bind)."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import (
    INT64,
    calls,
    check_against_onnxruntime,
    make_model,
    single_op_model,
    tensor,
)

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.errors import ValueNeededError


def test_scatter_is_scatter_elements_before_opset_11():
    model = single_op_model(
        "Scatter",
        {"x": (3, 4)},
        opset=10,
        axis=1,
        initializers={"i": np.array([[1, 0], [3, 2], [0, 0]]), "u": np.ones((3, 2), "float32")},
    )
    assert calls(check_against_onnxruntime(model)) == ["scatter_elements"]


@pytest.mark.parametrize(("opset", "largest"), [(9, 1), (11, 0), (11, 1)])
def test_topk_with_ties_compiled(opset, largest):
    """Ties come out lower index first, in the graph op compiled to C and at every opset form."""
    inputs = {"x": np.array([[1, 3, 3, 1, 2], [0, 0, 5, 5, 5]], "float32")}
    if opset < 10:
        node = helper.make_node("TopK", ["x"], ["v", "i"], k=3, axis=1)
        inits = {}
    else:
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=largest)
        inits = {"k": np.array([3])}
    model = make_model(
        [node],
        [tensor("x", (2, 5))],
        [tensor("v", (2, 3)), tensor("i", (2, 3), INT64)],
        inits,
        opset,
    )
    mod = check_against_onnxruntime(model, inputs=inputs, compiled=True)
    assert "topk" in calls(mod)


def test_topk_of_a_constant_folds():
    model = single_op_model(
        "TopK",
        {},
        output_count=2,
        opset=11,
        input_names=["x", "k"],
        initializers={"x": np.array([4, 1, 4, 2], "int32"), "k": np.array([2])},
    )
    assert calls(check_against_onnxruntime(model)) == []


def _constant_input_model(op_type, data, outputs=1, **attrs):
    """A one-node model whose data is an initializer (known at import)."""
    nodes = [helper.make_node(op_type, ["x"], [f"y{i}" for i in range(outputs)], **attrs)]
    outs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)]
    return make_model(nodes, [], outs, {"x": data}, opset=17)


@pytest.mark.parametrize(
    ("op_type", "data", "outputs", "attrs"),
    [
        ("NonZero", np.array([[1, 0, 2], [0, 3, 0]], "float32"), 1, {}),
        ("Unique", np.array([2, 1, 1, 3, 4, 3], "float32"), 4, {"sorted": 0}),
        ("Unique", np.array([[1, 0], [1, 0], [2, 3]], "float32"), 4, {"axis": -2}),
    ],
)
def test_value_dependent_ops_fold(op_type, data, outputs, attrs):
    model = _constant_input_model(op_type, data, outputs, **attrs)
    assert calls(check_against_onnxruntime(model)) == []


def test_compress_folds_and_a_graph_input_is_needed():
    model = single_op_model(
        "Compress", {"x": (3, 2)}, axis=0, initializers={"c": np.array([True, False])}
    )
    with pytest.raises(ValueNeededError) as err:
        from_onnx(model)
    assert err.value.inputs == ("x",)
    data = np.arange(6, dtype="float32").reshape(3, 2)
    model = single_op_model(
        "Compress",
        {},
        input_names=["x", "c"],
        axis=-1,
        initializers={"x": data, "c": np.array([False, True])},
    )
    check_against_onnxruntime(model)


@pytest.mark.parametrize("center_point_box", [0, 1])
def test_non_max_suppression_folds(center_point_box):
    rng = np.random.default_rng(0)
    corners = rng.uniform(0, 1, (2, 6, 2)).astype("float32")
    boxes = np.concatenate([corners, corners + rng.uniform(0.1, 0.5, (2, 6, 2))], axis=-1)
    inits = {"boxes": boxes.astype("float32"),
             "scores": rng.uniform(0, 1, (2, 3, 6)).round(1).astype("float32"),
             "max": np.array([3]), "iou": np.array([0.3], "float32"),
             "floor": np.array([0.2], "float32")}  # fmt: skip
    model = single_op_model(
        "NonMaxSuppression", {}, initializers=inits, center_point_box=center_point_box
    )
    check_against_onnxruntime(model)


@pytest.mark.parametrize(("time_axis", "batch_axis"), [(0, 1), (1, 0)])
def test_reverse_sequence(time_axis, batch_axis):
    shape = (4, 3, 2) if time_axis == 0 else (3, 4, 2)
    node = helper.make_node(
        "ReverseSequence", ["x", "lens"], ["y"], time_axis=time_axis, batch_axis=batch_axis
    )
    model = make_model(
        [node], [tensor("x", shape), tensor("lens", (3,), INT64)], [tensor("y", shape)]
    )
    check_against_onnxruntime(
        model,
        inputs={"x": np.arange(24, dtype="float32").reshape(shape), "lens": np.array([4, 1, 2])},
    )


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    """The KV-cache update of opset 24, against ONNX's reference (scatter_elements in C)."""
    from onnx.reference import ReferenceEvaluator

    from tessel.graph.executor import compile as compile_graph

    node = helper.make_node("TensorScatter", ["past", "update", "at"], ["y"], mode=mode, axis=2)
    model = make_model(
        [node],
        [
            tensor("past", (2, 1, 5, 3)),
            tensor("update", (2, 1, 2, 3)),
            tensor("at", (2,), TensorProto.INT64),
        ],
        [tensor("y", (2, 1, 5, 3))],
        opset=24,
    )
    rng = np.random.default_rng(0)
    inputs = {"past": rng.standard_normal((2, 1, 5, 3)).astype("float32"),
              "update": rng.standard_normal((2, 1, 2, 3)).astype("float32"),
              "at": np.array([1, 4 if mode == "circular" else 3])}  # fmt: skip
    expected = ReferenceEvaluator(model).run(None, inputs)[0]
    mod, params = from_onnx(model)
    np.testing.assert_array_equal(compile_graph(mod, params)(**inputs), expected)


@pytest.mark.parametrize("axis", [0, -1])
def test_one_hot_with_negative_and_out_of_range_float_indices(axis):
    model = single_op_model(
        "OneHot",
        {"i": (2, 3)},
        axis=axis,
        initializers={"depth": np.array(4.0, "float32"), "values": np.array([-1, 2], "float32")},
    )
    inputs = {"i": np.array([[0, -1, 3], [4, -5, 2]], "float32")}
    mod = check_against_onnxruntime(model, inputs=inputs, compiled=True)
    assert "one_hot" in calls(mod)
