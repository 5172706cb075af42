"""RMSNormalization, InstanceNormalization, GroupNormalization (opsets 18 and 21), LRN,
MeanVarianceNormalization, LpNormalization and BatchNormalization in training mode against
onnxruntime."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import check_against_onnxruntime, evaluate_main, make_model, single_op_model

from tessel.frontend.onnx import OnnxImportError, from_onnx


def _params(*shapes, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization_matches_onnxruntime(axis):
    scale_shape = (3, 4) if axis == 1 else (4,)
    model = single_op_model(
        "RMSNormalization",
        {"x": (2, 3, 4)},
        opset=23,
        axis=axis,
        initializers={"scale": _params(scale_shape)[0]},
    )
    check_against_onnxruntime(model, compiled=axis == -1)


def test_rms_normalization_of_doubles_computes_in_the_stash_type():
    x = np.random.default_rng(4).standard_normal((2, 4))
    for stash_type, dtype in ((TensorProto.FLOAT, "float32"), (TensorProto.DOUBLE, "float64")):
        node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], stash_type=stash_type)
        model = make_model(
            [node],
            [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 4])],
            [helper.make_empty_tensor_value_info("y")],
            {"scale": np.ones(4)},
            opset=23,
        )
        mod, params = from_onnx(model)
        got = evaluate_main(mod, {"x": x, **params})[0]
        stashed = x.astype(dtype)
        rms = np.sqrt((stashed * stashed).mean(-1, keepdims=True) + 1e-5)
        want = (stashed / rms).astype(x.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == np.float64


def test_rms_normalization_with_an_integer_stash_type_is_refused():
    model = single_op_model(
        "RMSNormalization",
        {"x": (2, 4)},
        opset=23,
        stash_type=TensorProto.INT32,
        initializers={"scale": _params((4,))[0]},
    )
    with pytest.raises(OnnxImportError, match="stash_type"):
        from_onnx(model)


def test_instance_normalization_matches_onnxruntime():
    scale, bias = _params((3,), (3,))
    model = single_op_model(
        "InstanceNormalization",
        {"x": (2, 3, 4, 5)},
        epsilon=1e-3,
        initializers={"scale": scale, "bias": bias},
    )
    check_against_onnxruntime(model, compiled=True)


def _group_norm_model(opset, params):
    """(Opset 18's form, with a scale per group, is deprecated: onnx's inference refuses it.)"""
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2)
    # ONNX's inference does not expand the function: the output's type is given.
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3])],
        [numpy_helper.from_array(p, n) for n, p in zip(("scale", "bias"), params, strict=True)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_group_normalization_matches_onnxruntime():
    check_against_onnxruntime(_group_norm_model(21, _params((4,), (4,))), compiled=True)


def test_mean_variance_normalization_matches_onnxruntime():
    model = single_op_model("MeanVarianceNormalization", {"x": (2, 3, 4, 2)}, opset=13, axes=[0, 2])
    check_against_onnxruntime(model)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_is_zero_where_the_norm_is(p):
    model = single_op_model("LpNormalization", {"x": (3, 4)}, opset=22, axis=1, p=p)
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    x[1] = 0
    check_against_onnxruntime(model, inputs={"x": x}, compiled=p == 2)


@pytest.mark.parametrize("size", [3, 5])
def test_lrn_matches_onnxruntime(size):
    model = single_op_model(
        "LRN", {"x": (1, 5, 2, 2)}, opset=13, size=size, alpha=0.1, beta=0.6, bias=1.5
    )
    check_against_onnxruntime(model, compiled=size == 3)


def test_lrn_of_even_size_centres_the_window_as_onnx_says():
    """onnxruntime refuses an even size; the window is c - floor((size - 1) / 2) ..
    c + ceil((size - 1) / 2), as onnx's reference computes it."""
    model = single_op_model(
        "LRN", {"x": (1, 4, 1, 1)}, opset=13, size=2, alpha=1.0, beta=1.0, bias=1.0
    )
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1, 1)
    mod, params = from_onnx(model)
    got = evaluate_main(mod, {"x": x, **params})[0]
    square_sum = np.array([1 + 4, 4 + 9, 9 + 16, 16], np.float32)  # channels c and c + 1
    np.testing.assert_allclose(got.reshape(-1), x.reshape(-1) / (1 + square_sum / 2), rtol=1e-6)


def test_batch_normalization_training_mode_updates_the_running_statistics():
    scale, bias, mean, var = _params((3,), (3,), (3,), (3,))
    node = helper.make_node(
        "BatchNormalization",
        ["x", "scale", "bias", "mean", "var"],
        ["y", "running_mean", "running_var"],
        training_mode=1,
        momentum=0.8,
    )
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_empty_tensor_value_info(n) for n in ("y", "running_mean", "running_var")],
        dict(scale=scale, bias=bias, mean=mean, var=var),
        opset=15,
    )
    check_against_onnxruntime(model, compiled=True)


def test_layer_normalization_of_doubles_computes_in_float32_as_stash_type_says():
    """The statistics (float32 outputs) and the normalisation computed in float32."""
    node = helper.make_node(
        "LayerNormalization",
        ["x", "scale"],
        ["y", "mean", "inv_std"],
        axis=1,
        stash_type=TensorProto.FLOAT,
    )
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3, 4])],
        [helper.make_empty_tensor_value_info(n) for n in ("y", "mean", "inv_std")],
        {"scale": np.linspace(0.5, 1.5, 12).reshape(3, 4)},
        opset=17,
    )
    check_against_onnxruntime(model, rtol=1e-6, compiled=True)
