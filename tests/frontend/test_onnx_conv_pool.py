"""Convolution and pooling of every spatial rank against onnxruntime, compiled to C: 1-D and
3-D Conv, ConvTranspose, MaxPool (with Indices), AveragePool, LpPool, GlobalLpPool, MaxUnpool."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import (
    calls,
    check_against_onnxruntime,
    make_model,
    run_onnxruntime,
    single_op_model,
    tensor,
)

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph

WEIGHTS = np.random.default_rng(1)


def _weight(*shape: int) -> np.ndarray:
    return WEIGHTS.standard_normal(shape).astype(np.float32)


def test_conv1d_runs_as_conv2d_over_a_unit_height():
    model = single_op_model(
        "Conv",
        {"x": (2, 4, 9)},
        initializers={"w": _weight(6, 2, 3)},
        group=2,
        strides=[2],
        pads=[2, 1],
        dilations=[2],
    )
    mod = check_against_onnxruntime(model, compiled=True)
    assert "nn.conv2d" in calls(mod)


def test_conv3d_with_bias_and_same_padding():
    model = single_op_model(
        "Conv",
        {"x": (1, 2, 4, 5, 3)},
        initializers={"w": _weight(3, 2, 2, 3, 2), "b": _weight(3)},
        auto_pad="SAME_LOWER",
        strides=[2, 1, 1],
    )
    assert "nn.conv3d" in calls(check_against_onnxruntime(model, compiled=True))


CONV_TRANSPOSE_CASES = {
    "strides_pads_dilations_groups": (
        (1, 4, 3, 4),
        (4, 2, 3, 2),
        dict(strides=[2, 3], pads=[1, 0, 0, 1], dilations=[2, 1], group=2, output_padding=[1, 0]),
    ),
    "output_shape": ((1, 1, 3, 3), (1, 2, 3, 3), dict(strides=[3, 2], output_shape=[10, 8])),
    "same_upper": ((1, 1, 3, 3), (1, 2, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    "1d": ((2, 3, 5), (3, 2, 4), dict(strides=[2])),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES)
def test_conv_transpose(case):
    data, weight, attrs = CONV_TRANSPOSE_CASES[case]
    init = {"w": _weight(*weight), "b": _weight(weight[1] * attrs.get("group", 1))}
    model = single_op_model("ConvTranspose", {"x": data}, initializers=init, opset=22, **attrs)
    check_against_onnxruntime(model, compiled=True)


def test_conv_transpose_3d():
    model = single_op_model(
        "ConvTranspose",
        {"x": (1, 2, 2, 3, 2)},
        initializers={"w": _weight(2, 2, 2, 2, 2)},
        strides=[2, 1, 2],
        pads=[0, 1, 0, 0, 0, 1],
    )
    check_against_onnxruntime(model, compiled=True)


def test_pools_of_rank_one_and_three():
    """1-D through nn.max_pool2d over a unit height; 3-D as a pool over H, W, then over D."""
    max1d = single_op_model(
        "MaxPool", {"x": (1, 2, 11)}, kernel_shape=[3], strides=[2], ceil_mode=1, opset=22
    )
    check_against_onnxruntime(max1d, compiled=True)
    avg3d = single_op_model(
        "AveragePool",
        {"x": (1, 2, 5, 6, 4)},
        kernel_shape=[2, 3, 2],
        strides=[2, 2, 1],
        pads=[1, 0, 1, 0, 1, 1],
        count_include_pad=1,
        ceil_mode=1,
        dilations=[1, 1, 2],
        opset=22,
    )
    mod = check_against_onnxruntime(avg3d, compiled=True)
    assert calls(mod).count("nn.avg_pool2d") == 2


def test_max_pool_3d_with_dilations_excludes_the_padding():
    model = single_op_model(
        "MaxPool",
        {"x": (1, 1, 5, 4, 6)},
        kernel_shape=[2, 2, 3],
        dilations=[2, 1, 2],
        pads=[1, 1, 0, 1, 0, 2],
        opset=22,
    )
    check_against_onnxruntime(model, compiled=True)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(storage_order):
    model = single_op_model(
        "MaxPool",
        {"x": (2, 2, 5, 5)},
        output_count=2,
        kernel_shape=[3, 2],
        strides=[2, 2],
        pads=[1, 0, 1, 1],
        storage_order=storage_order,
        opset=22,
    )
    check_against_onnxruntime(model, compiled=True)


def test_lp_pool_and_global_lp_pool():
    lp = single_op_model(
        "LpPool",
        {"x": (1, 2, 7, 6)},
        kernel_shape=[3, 2],
        p=3,
        strides=[2, 2],
        pads=[1, 0, 1, 1],
        opset=22,
    )
    check_against_onnxruntime(lp, compiled=True, rtol=1e-3)
    check_against_onnxruntime(
        single_op_model("GlobalLpPool", {"x": (2, 3, 4, 5)}, p=2), compiled=True
    )


def _unpool_model(with_shape: bool):
    inputs = [tensor("x", (1, 1, 2, 2)), tensor("i", (1, 1, 2, 2), TensorProto.INT64)]
    names = ["x", "i", "shape"] if with_shape else ["x", "i"]
    node = helper.make_node("MaxUnpool", names, ["y"], kernel_shape=[2, 2], strides=[2, 2])
    init = {"shape": np.array([1, 1, 5, 5], np.int64)} if with_shape else None
    out = tensor("y", (1, 1, 5, 5) if with_shape else (1, 1, 4, 4))
    return make_model([node], inputs, [out], init, opset=22)


def test_max_unpool_pads_a_larger_output_shape_at_the_ends():
    """Regression: positions index the unpooled 4 x 4 image, then zeros pad it to 5 x 5 (ONNX's
    reference; not positions of the 5 x 5 output)."""
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    i = np.array([[[[5, 7], [13, 15]]]], np.int64)
    mod, _ = from_onnx(_unpool_model(True))
    out = compile_graph(mod, {})(x=x, i=i)
    expected = np.zeros((1, 1, 5, 5), np.float32)
    expected[0, 0, 1::2, 1::2] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(out, expected)
    check_against_onnxruntime(_unpool_model(False), inputs={"x": x, "i": i})


def test_max_unpool_refuses_a_smaller_output_shape():
    node = helper.make_node(
        "MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2]
    )
    inputs = [tensor("x", (1, 1, 2, 2)), tensor("i", (1, 1, 2, 2), TensorProto.INT64)]
    model = make_model(
        [node],
        inputs,
        [tensor("y", (1, 1, 3, 3))],
        {"shape": np.array([1, 1, 3, 3], np.int64)},
        opset=22,
    )
    with pytest.raises(OnnxImportError, match="output_shape"):
        from_onnx(model)


def test_max_pool_indices_never_pick_the_padding():
    """Regression: a window of -inf values starting in the padding names its first input
    position, as onnxruntime does, not the padding (which pads with -inf too)."""
    model = single_op_model(
        "MaxPool",
        {"x": (1, 1, 4, 4)},
        output_count=2,
        kernel_shape=[3, 3],
        pads=[1, 1, 1, 1],
        opset=22,
    )
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 2, 2] = 1
    mod, _ = from_onnx(model)
    values, indices = compile_graph(mod, {})(x=x)
    expected = run_onnxruntime(model, {"x": x})
    np.testing.assert_array_equal(values, expected[0])
    np.testing.assert_array_equal(indices, expected[1])


@pytest.mark.parametrize(("group", "offset_group"), [(1, 2), (2, 1)])
def test_deform_conv(group, offset_group):
    """Fractional offsets, some reaching outside the input (sampled as zero), with a mask."""
    out, taps = (3, 3), 2 * 3
    node = helper.make_node(
        "DeformConv",
        ["x", "w", "offset", "b", "mask"],
        ["y"],
        kernel_shape=[2, 3],
        strides=[2, 1],
        pads=[1, 0, 0, 1],
        dilations=[1, 2],
        group=group,
        offset_group=offset_group,
    )
    inputs = [tensor("x", (2, 4, 5, 6)), tensor("offset", (2, offset_group * taps * 2, *out)),
              tensor("mask", (2, offset_group * taps, *out))]  # fmt: skip
    init = {"w": _weight(4, 4 // group, 2, 3), "b": _weight(4)}
    model = make_model([node], inputs, [tensor("y", (2, 4, *out))], init, opset=22)
    rng = np.random.default_rng(5)
    values = {"x": rng.standard_normal((2, 4, 5, 6)).astype(np.float32),
              "offset": rng.uniform(-2.5, 2.5, (2, offset_group * taps * 2, *out)),
              "mask": rng.uniform(0, 1, (2, offset_group * taps, *out))}  # fmt: skip
    values = {k: v.astype(np.float32) for k, v in values.items()}
    check_against_onnxruntime(model, inputs=values, compiled=True, rtol=1e-4)


def test_an_empty_batch_pools_and_convolves_to_an_empty_batch():
    model = single_op_model("MaxPool", {"x": (0, 2, 5)}, kernel_shape=[2], opset=22)
    x = np.zeros((0, 2, 5), np.float32)
    assert (
        compile_graph(from_onnx(model)[0], {})(x=x).shape
        == run_onnxruntime(model, {"x": x})[0].shape
    )
