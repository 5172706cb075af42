"""Neural-network converters: convolution, pooling, normalisation, matrix products, reductions."""

import numpy as np
import pytest
from onnx_testing import calls, check_against_onnxruntime, single_op_model, the_call

from tessel.frontend.onnx import from_onnx

RNG = np.random.default_rng(7)


def _weights(*shape):
    return RNG.standard_normal(shape).astype("float32")


CONV_CASES = {
    "plain": ({}, (8, 3, 3, 3)),
    "pads_strides": ({"pads": [1, 2, 0, 1], "strides": [2, 1]}, (8, 3, 3, 3)),
    "dilations": ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, (4, 3, 3, 3)),
    "groups": ({"group": 3}, (6, 1, 3, 3)),
    "same_upper": ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (4, 3, 4, 4)),
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (4, 3, 4, 4)),
    "valid": ({"auto_pad": "VALID", "strides": [3, 2]}, (4, 3, 2, 3)),
    "rect_kernel": ({"kernel_shape": [1, 5]}, (4, 3, 1, 5)),
}


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv(case):
    attrs, weight_shape = CONV_CASES[case]
    model = single_op_model(
        "Conv", {"x": (2, 3, 11, 10)}, initializers={"w": _weights(*weight_shape)}, **attrs
    )
    mod = check_against_onnxruntime(model)
    conv = the_call(mod, "nn.conv2d")
    assert conv.attrs["channels"] == weight_shape[0]
    assert conv.attrs["kernel_size"] == weight_shape[2:]
    assert conv.attrs["groups"] == attrs.get("group", 1)


def test_conv_padding_order_is_onnx_order():
    model = single_op_model(
        "Conv", {"x": (1, 3, 8, 8)}, initializers={"w": _weights(2, 3, 3, 3)}, pads=[1, 2, 3, 0]
    )
    assert the_call(from_onnx(model)[0], "nn.conv2d").attrs["padding"] == (1, 2, 3, 0)


def test_depthwise_conv_with_bias():
    model = single_op_model(
        "Conv",
        {"x": (1, 8, 9, 9)},
        initializers={"w": _weights(8, 1, 3, 3), "b": _weights(8)},
        group=8,
        pads=[1, 1, 1, 1],
        strides=[2, 2],
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["nn.conv2d", "nn.bias_add"]
    assert the_call(mod, "nn.conv2d").attrs["groups"] == 8


def test_conv_same_pads_put_the_extra_at_the_right_end():
    upper = single_op_model(
        "Conv", {"x": (1, 1, 6, 6)}, initializers={"w": _weights(1, 1, 2, 2)}, auto_pad="SAME_UPPER"
    )
    lower = single_op_model(
        "Conv", {"x": (1, 1, 6, 6)}, initializers={"w": _weights(1, 1, 2, 2)}, auto_pad="SAME_LOWER"
    )
    assert the_call(from_onnx(upper)[0], "nn.conv2d").attrs["padding"] == (0, 0, 1, 1)
    assert the_call(from_onnx(lower)[0], "nn.conv2d").attrs["padding"] == (1, 1, 0, 0)


def test_batch_norm_takes_field_zero():
    params = {
        "s": _weights(4),
        "b": _weights(4),
        "m": _weights(4),
        "v": RNG.uniform(0.5, 2, 4).astype("float32"),
    }
    model = single_op_model(
        "BatchNormalization", {"x": (2, 4, 5, 5)}, initializers=params, epsilon=1e-3
    )
    mod = check_against_onnxruntime(model)
    bn = the_call(mod, "nn.batch_norm")
    assert mod["main"].body.index == 0
    assert bn.attrs["epsilon"] == pytest.approx(1e-3)


MAX_POOL_CASES = {
    "plain": {"kernel_shape": [2, 2], "strides": [2, 2]},
    "pads": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    "ceil": {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    "ceil_pads": {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    "dilations": {"kernel_shape": [2, 2], "dilations": [2, 2]},
    "same_upper": {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
}


@pytest.mark.parametrize("case", MAX_POOL_CASES)
def test_max_pool(case):
    model = single_op_model("MaxPool", {"x": (1, 3, 10, 11)}, **MAX_POOL_CASES[case])
    mod = check_against_onnxruntime(model)
    pool = the_call(mod, "nn.max_pool2d")
    assert pool.attrs["pool_size"] == tuple(MAX_POOL_CASES[case]["kernel_shape"])


def test_max_pool_ceil_mode_becomes_end_padding():
    model = single_op_model(
        "MaxPool", {"x": (1, 1, 10, 10)}, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1
    )
    pool = the_call(check_against_onnxruntime(model), "nn.max_pool2d")
    assert pool.attrs["padding"] == (0, 0, 1, 1)
    assert pool.attrs["ceil_mode"] is False


AVG_POOL_CASES = {
    "plain": {"kernel_shape": [3, 3], "strides": [2, 2]},
    "exclude_pad": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    "include_pad": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    "ceil": {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    "ceil_pads": {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
}


@pytest.mark.parametrize("case", AVG_POOL_CASES)
def test_average_pool(case):
    model = single_op_model("AveragePool", {"x": (2, 3, 10, 11)}, **AVG_POOL_CASES[case])
    mod = check_against_onnxruntime(model)
    pool = the_call(mod, "nn.avg_pool2d")
    assert pool.attrs["count_include_pad"] == bool(AVG_POOL_CASES[case].get("count_include_pad"))


def test_global_pools():
    assert calls(
        check_against_onnxruntime(single_op_model("GlobalAveragePool", {"x": (2, 3, 5, 4)}))
    ) == ["nn.global_avg_pool2d"]
    assert calls(
        check_against_onnxruntime(single_op_model("GlobalMaxPool", {"x": (2, 3, 5, 4)}))
    ) == ["nn.global_max_pool2d"]


@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm_transposes(trans_a, trans_b):
    a_shape = (5, 3) if trans_a else (3, 5)
    b_shape = (4, 5) if trans_b else (5, 4)
    model = single_op_model(
        "Gemm",
        {"a": a_shape},
        initializers={"b": _weights(*b_shape), "c": _weights(4)},
        transA=trans_a,
        transB=trans_b,
        alpha=1.5,
        beta=0.5,
    )
    mod = check_against_onnxruntime(model)
    dense = the_call(mod, "nn.dense")
    assert dense.args[1].data.shape == (4, 5)  # the weight, folded into [units, k]
    assert dense.attrs["units"] == 4
    assert ("transpose" in calls(mod)) == bool(trans_a)


def test_gemm_with_graph_operands():
    model = single_op_model("Gemm", {"a": (3, 5), "b": (5, 4)})
    assert calls(check_against_onnxruntime(model)) == ["transpose", "nn.dense"]


MATMUL_CASES = {
    "2d": ((3, 5), (5, 4), ["nn.dense"]),
    "3d_by_2d": ((2, 3, 5), (5, 4), ["reshape", "nn.dense", "reshape"]),
    "batched": ((2, 3, 5), (2, 5, 4), ["nn.batch_matmul"]),
    "4d_batched": (
        (2, 4, 3, 5),
        (2, 4, 5, 6),
        ["reshape", "reshape", "nn.batch_matmul", "reshape"],
    ),
    "broadcast": (
        (2, 1, 3, 5),
        (4, 5, 6),
        ["broadcast_to", "reshape", "broadcast_to", "reshape", "nn.batch_matmul", "reshape"],
    ),
    "2d_by_3d": ((3, 5), (2, 5, 4), ["broadcast_to", "nn.batch_matmul"]),
    "vector_left": ((5,), (5, 4), ["reshape", "nn.dense", "reshape"]),
    "vector_right": ((2, 3, 5), (5,), ["reshape", "reshape", "nn.dense", "reshape"]),
}


@pytest.mark.parametrize("case", MATMUL_CASES)
def test_matmul(case):
    a_shape, b_shape, expected = MATMUL_CASES[case]
    model = single_op_model("MatMul", {"a": a_shape, "b": b_shape})
    mod = check_against_onnxruntime(model)
    assert [c for c in calls(mod) if c != "transpose"] == expected


def test_matmul_by_constant_weight_folds_the_transpose():
    model = single_op_model("MatMul", {"a": (2, 3, 5)}, initializers={"w": _weights(5, 4)})
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["reshape", "nn.dense", "reshape"]
    assert the_call(mod, "nn.dense").args[1].data.shape == (4, 5)


@pytest.mark.parametrize(
    ("opset", "axis"), [(11, 1), (11, 2), (11, -1), (13, 1), (13, -1), (12, None)]
)
def test_softmax_semantics_by_opset(opset, axis):
    attrs = {} if axis is None else {"axis": axis}
    model = single_op_model("Softmax", {"x": (2, 3, 4)}, opset=opset, **attrs)
    mod = check_against_onnxruntime(model)
    flattens = opset < 13 and axis not in (2, -1)
    assert ("reshape" in calls(mod)) == flattens


def test_log_softmax():
    mod = check_against_onnxruntime(single_op_model("LogSoftmax", {"x": (3, 5)}, opset=13))
    assert calls(mod) == ["nn.log_softmax"]


def test_layer_norm_last_axis():
    model = single_op_model(
        "LayerNormalization",
        {"x": (2, 3, 8)},
        initializers={"g": _weights(8), "b": _weights(8)},
        epsilon=1e-6,
    )
    mod = check_against_onnxruntime(model)
    norm = the_call(mod, "nn.layer_norm")
    assert dict(norm.attrs) == {"axis": -1, "epsilon": pytest.approx(1e-6)}


def test_layer_norm_over_two_axes_decomposes():
    model = single_op_model(
        "LayerNormalization", {"x": (2, 3, 4)}, initializers={"g": _weights(3, 4)}, axis=-2
    )
    mod = check_against_onnxruntime(model)
    assert "nn.layer_norm" not in calls(mod)
    assert "rsqrt" in calls(mod)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize(
    "op_type",
    [
        "ReduceMean",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceL2",
        "ReduceL1",
        "ReduceSumSquare",
    ],
)
def test_reduce_axes_by_opset(op_type, opset):
    if opset >= 18:
        model = single_op_model(
            op_type,
            {"x": (2, 3, 4)},
            initializers={"axes": np.array([-1, 1])},
            opset=opset,
            keepdims=0,
        )
    else:
        model = single_op_model(op_type, {"x": (2, 3, 4)}, opset=opset, axes=[-1, 1], keepdims=0)
    mod = check_against_onnxruntime(model)
    reduction = next(c for c in calls(mod) if c in ("mean", "max", "min", "prod", "sum"))
    assert the_call(mod, reduction).attrs["axis"] == (1, 2)


@pytest.mark.parametrize("opset", [11, 13])
def test_reduce_sum_axes_attribute_then_input(opset):
    if opset >= 13:
        model = single_op_model(
            "ReduceSum", {"x": (2, 3, 4)}, initializers={"axes": np.array([0])}, opset=opset
        )
    else:
        model = single_op_model("ReduceSum", {"x": (2, 3, 4)}, axes=[0], opset=opset)
    mod = check_against_onnxruntime(model)
    assert dict(the_call(mod, "sum").attrs) == {"axis": (0,), "keepdims": True}


def test_reduce_over_everything_and_noop():
    mod = check_against_onnxruntime(single_op_model("ReduceMean", {"x": (2, 3)}, keepdims=0))
    assert the_call(mod, "mean").attrs["axis"] == (0, 1)
    noop = single_op_model("ReduceSum", {"x": (2, 3)}, opset=13, noop_with_empty_axes=1)
    assert calls(check_against_onnxruntime(noop)) == []


def test_argmax():
    mod = check_against_onnxruntime(single_op_model("ArgMax", {"x": (3, 5)}, axis=1, keepdims=0))
    assert calls(mod) == ["argmax", "cast"]
