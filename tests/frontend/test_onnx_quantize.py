"""The quantisation operators (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) against onnxruntime through the
evaluator and the compiled C, the refusals of types Tessel cannot hold, and a QDQ-quantised
ResNet-style model against onnxruntime's int8 result."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import (
    calls,
    check_against_onnxruntime,
    make_model,
    run_onnxruntime,
    tensor,
)

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph

UINT8, INT8 = TensorProto.UINT8, TensorProto.INT8


def _model(op_type, inputs, initializers, opset, outputs=1, **attrs):
    """One node reading the graph `inputs` (name -> (shape, elem type)), then initializers."""
    names = [*inputs, *initializers]
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(outputs)], **attrs)
    declared = [tensor(name, shape, elem) for name, (shape, elem) in inputs.items()]
    results = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)]
    return make_model([node], declared, results, initializers, opset)


def _ints(shape, dtype, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(dtype)


# --- QuantizeLinear ----------------------------------------------------------------------------


def test_quantize_rounds_half_to_even_and_saturates():
    """Regression: ties go to even (2.5 -> 2, -2.5 -> -2), never away from zero."""
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 7.5, 300.0, -300.0], np.float32)
    scale, zero = np.float32(0.5), np.int8(-3)
    model = _model(
        "QuantizeLinear", {"x": ((9,), TensorProto.FLOAT)}, {"s": scale, "z": zero}, opset=13
    )
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)
    expected = np.clip(np.rint(x / scale) - 3, -128, 127).astype(np.int8)
    assert expected.tolist() == [-2, 0, 2, -4, -6, -8, 12, 127, -128]


@pytest.mark.parametrize(
    ("zero_type", "axis", "opset"),
    [(np.uint8, 1, 13), (np.int8, -3, 19), (np.int16, 2, 21), (np.uint16, 0, 21)],
)
def test_quantize_per_axis(zero_type, axis, opset):
    shape = (2, 3, 4)
    extent = shape[axis]
    scale = np.linspace(0.01, 0.3, extent).astype(np.float32)
    zero = np.linspace(np.iinfo(zero_type).min, np.iinfo(zero_type).max, extent).astype(zero_type)
    model = _model(
        "QuantizeLinear",
        {"x": (shape, TensorProto.FLOAT)},
        {"s": scale, "z": zero},
        opset=opset,
        axis=axis,
    )
    check_against_onnxruntime(
        model,
        inputs={"x": np.random.default_rng(1).normal(0, 20, shape).astype(np.float32)},
        compiled=True,
    )


def test_quantize_blocked_with_a_partial_block_and_scales_as_inputs():
    """Blocks of 3 along an axis of 4 (the last block partial); scale and zero point are graph
    inputs, repeated per block in the graph."""
    inputs = {
        "x": ((2, 4), TensorProto.FLOAT),
        "s": ((2, 2), TensorProto.FLOAT),
        "z": ((2, 2), INT8),
    }
    model = _model("QuantizeLinear", inputs, {}, opset=21, axis=1, block_size=3)
    values = {
        "x": np.random.default_rng(2).normal(0, 3, (2, 4)).astype(np.float32),
        "s": np.array([[0.1, 0.2], [0.05, 0.3]], np.float32),
        "z": np.array([[1, -2], [0, 5]], np.int8),
    }
    check_against_onnxruntime(model, inputs=values, compiled=True)


def test_quantize_without_zero_point_is_uint8_and_output_dtype_sets_it():
    model = _model(
        "QuantizeLinear", {"x": ((5,), TensorProto.FLOAT)}, {"s": np.float32(0.1)}, opset=13
    )
    assert from_onnx(model)[0]["main"].ret_type.dtype == "uint8"
    check_against_onnxruntime(model, compiled=True)
    model = _model(
        "QuantizeLinear",
        {"x": ((5,), TensorProto.FLOAT)},
        {"s": np.float32(0.1)},
        opset=21,
        output_dtype=TensorProto.INT16,
    )
    check_against_onnxruntime(model)


def test_quantize_of_a_constant_folds_and_of_an_empty_tensor_works():
    model = _model(
        "QuantizeLinear",
        {},
        {"x": np.array([0.25, 1.0, -9.0], np.float32), "s": np.float32(0.5)},
        opset=13,
    )
    assert calls(check_against_onnxruntime(model, inputs={})) == []
    model = _model(
        "QuantizeLinear",
        {"x": ((0, 3), TensorProto.FLOAT)},
        {"s": np.float32(0.5), "z": np.uint8(7)},
        opset=13,
    )
    mod, _ = from_onnx(model)
    assert mod["main"].ret_type.shape == (0, 3)


@pytest.mark.parametrize("elem", [TensorProto.INT4, TensorProto.FLOAT8E4M3FN, TensorProto.UINT4])
def test_quantize_to_types_tessel_cannot_hold_is_refused(elem):
    zero = helper.make_tensor("z", elem, [], [0])
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [tensor("x", [4])],
        [tensor("y", [4], elem)],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]), zero],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    with pytest.raises(OnnxImportError, match="Tessel"):
        from_onnx(model)


# --- DequantizeLinear --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("elem", "dtype", "axis"),
    [
        (UINT8, np.uint8, None),
        (INT8, np.int8, 1),
        (TensorProto.INT16, np.int16, -1),
        (TensorProto.UINT16, np.uint16, 0),
    ],
)
def test_dequantize(elem, dtype, axis):
    shape = (3, 4)
    extent = 1 if axis is None else shape[axis]
    scale = np.linspace(0.01, 0.5, extent).astype(np.float32).reshape(() if axis is None else -1)
    zero = _ints(scale.shape, dtype, seed=3)
    attrs = {} if axis is None else {"axis": axis}
    model = _model(
        "DequantizeLinear", {"x": (shape, elem)}, {"s": scale, "z": zero}, opset=21, **attrs
    )
    check_against_onnxruntime(model, inputs={"x": _ints(shape, dtype)}, compiled=True)


def test_dequantize_int32_without_zero_point_and_blocked():
    model = _model(
        "DequantizeLinear", {"x": ((6,), TensorProto.INT32)}, {"s": np.float32(0.02)}, opset=13
    )
    x = np.array([-(2**31), -5, 0, 3, 2**24 + 1, 2**31 - 1], np.int32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)
    blocked = _model(
        "DequantizeLinear",
        {"x": ((2, 5), UINT8)},
        {
            "s": np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]], np.float32),
            "z": np.array([[0, 128, 255], [1, 2, 3]], np.uint8),
        },
        opset=21,
        axis=1,
        block_size=2,
    )
    check_against_onnxruntime(blocked, inputs={"x": _ints((2, 5), np.uint8)}, compiled=True)


def test_dequantize_of_a_constant_weight_folds_per_channel():
    weight = _ints((4, 3), np.int8)
    model = _model(
        "DequantizeLinear",
        {},
        {"w": weight, "s": np.arange(1, 5, dtype=np.float32), "z": np.zeros(4, np.int8)},
        opset=13,
        axis=0,
    )
    assert calls(check_against_onnxruntime(model, inputs={})) == []


# --- DynamicQuantizeLinear ---------------------------------------------------------------------


@pytest.mark.parametrize("shift", [0.0, 5.0, -5.0])
def test_dynamic_quantize(shift):
    model = _model(
        "DynamicQuantizeLinear", {"x": ((3, 4), TensorProto.FLOAT)}, {}, opset=11, outputs=3
    )
    x = np.random.default_rng(4).normal(shift, 2, (3, 4)).astype(np.float32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=shift == 0.0)


# --- integer products --------------------------------------------------------------------------


def test_matmul_integer_int8_by_uint8_with_per_column_zero_points():
    inputs = {"a": ((2, 3, 5), INT8), "b": ((5, 4), UINT8)}
    model = _model(
        "MatMulInteger",
        inputs,
        {"az": np.int8(-7), "bz": np.array([0, 128, 255, 3], np.uint8)},
        opset=10,
    )
    values = {"a": _ints((2, 3, 5), np.int8), "b": _ints((5, 4), np.uint8, seed=1)}
    mod = check_against_onnxruntime(model, inputs=values, compiled=True)
    assert "nn.dense" in calls(mod)


def test_matmul_integer_batched_without_zero_points():
    inputs = {"a": ((2, 3, 5), UINT8), "b": ((2, 5, 4), UINT8)}
    model = _model("MatMulInteger", inputs, {}, opset=10)
    values = {"a": _ints((2, 3, 5), np.uint8), "b": _ints((2, 5, 4), np.uint8, seed=1)}
    check_against_onnxruntime(model, inputs=values, compiled=True)


@pytest.mark.parametrize(
    ("a_shape", "a_zero_shape"), [((3, 5), (3,)), ((2, 3, 5), (2, 3, 1)), ((2, 3, 5), (3,))]
)
def test_matmul_integer_per_row_zero_points(a_shape, a_zero_shape):
    """onnxruntime takes only a per-tensor a_zero_point, and ONNX's reference subtracts an
    M-vector along K; the spec's per-row zero point is checked against NumPy."""
    b, bz = _ints((5, 2), np.uint8, 1), np.array([7, 250], np.uint8)
    az = _ints(a_zero_shape, np.uint8, 2)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    model = make_model(
        [node],
        [tensor("a", a_shape, UINT8)],
        [helper.make_empty_tensor_value_info("y")],
        {"b": b, "az": az, "bz": bz},
        opset=10,
    )
    a = _ints(a_shape, np.uint8)
    rows = az.reshape(-1, 1) if az.ndim == 1 else az
    expected = (a.astype(np.int32) - rows) @ (b.astype(np.int32) - bz)
    mod, params = from_onnx(model)
    np.testing.assert_array_equal(compile_graph(mod, params)(a=a), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_matmul(dtype):
    elem = INT8 if dtype == np.int8 else UINT8
    init = {
        "as": np.float32(0.05),
        "az": np.array([3], dtype),
        "b": _ints((5, 4), dtype, 1),
        "bs": np.float32(0.02),
        "bz": dtype(1),
        "ys": np.float32(0.07),
        "yz": dtype(9),
    }
    names = ["a", "as", "az", "b", "bs", "bz", "ys", "yz"]
    node = helper.make_node("QLinearMatMul", names, ["y"])
    model = make_model(
        [node],
        [tensor("a", (2, 3, 5), elem)],
        [helper.make_empty_tensor_value_info("y")],
        init,
        opset=10,
    )
    mod = check_against_onnxruntime(model, inputs={"a": _ints((2, 3, 5), dtype)}, compiled=True)
    assert "qnn.requantize" in calls(mod)


def test_conv_integer_pads_with_the_zero_point():
    """The padding stands for the real 0, i.e. the zero point of x (ONNX's reference)."""
    inputs = {"x": ((1, 2, 5, 5), UINT8)}
    init = {"w": _ints((3, 2, 3, 3), np.uint8, 1), "xz": np.uint8(200), "wz": np.uint8(128)}
    model = _model("ConvInteger", inputs, init, opset=10, pads=[1, 1, 1, 1], strides=[2, 1])
    check_against_onnxruntime(model, inputs={"x": _ints((1, 2, 5, 5), np.uint8)}, compiled=True)


def test_conv_integer_per_channel_weight_zero_point_matches_onnx_reference():
    """onnxruntime refuses a per-channel w_zero_point; ONNX's reference implementation runs it."""
    inputs = {"x": ((1, 2, 4, 4), INT8)}
    init = {
        "w": _ints((3, 2, 2, 2), np.int8, 1),
        "xz": np.int8(-3),
        "wz": np.array([1, -128, 127], np.int8),
    }
    model = _model("ConvInteger", inputs, init, opset=10, pads=[0, 1, 1, 0])
    x = _ints((1, 2, 4, 4), np.int8)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    mod, params = from_onnx(model)
    np.testing.assert_array_equal(compile_graph(mod, params)(x=x), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_conv_per_channel_with_bias_and_groups(dtype):
    elem = INT8 if dtype == np.int8 else UINT8
    init = {
        "xs": np.float32(0.03),
        "xz": dtype(5),
        "w": _ints((4, 1, 3, 3), np.int8, 1),
        "ws": np.array([0.01, 0.02, 0.005, 0.04], np.float32),
        "wz": np.zeros(4, np.int8),
        "ys": np.float32(0.1),
        "yz": dtype(-4 if dtype == np.int8 else 100),
        "bias": np.array([-300, 0, 250, 1000], np.int32),
    }
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"]
    node = helper.make_node("QLinearConv", names, ["y"], group=2, pads=[1, 1, 1, 1])
    model = make_model(
        [node],
        [tensor("x", (1, 2, 5, 5), elem)],
        [helper.make_empty_tensor_value_info("y")],
        init,
        opset=10,
    )
    x = _ints((1, 2, 5, 5), dtype)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


def test_per_axis_input_zero_point_of_a_convolution_is_refused():
    inputs = {"x": ((1, 2, 4, 4), UINT8)}
    init = {"w": _ints((1, 2, 1, 1), np.uint8), "xz": np.array([1, 2], np.uint8)}
    model = _model("ConvInteger", inputs, init, opset=10)
    with pytest.raises(OnnxImportError, match="x_zero_point .* per tensor"):
        from_onnx(model)


# --- a QDQ-quantised ResNet-style model (issue 26's int8 acceptance) -----------------------------


def _tiny_resnet():
    """Conv-BN-ReLU stem, a residual block, a strided conv, global pool and a linear head, with
    batch-norm statistics that are not the identity."""
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU()
            )
            self.block = nn.Sequential(
                nn.Conv2d(8, 8, 3, padding=1, bias=False),
                nn.BatchNorm2d(8),
                nn.ReLU(),
                nn.Conv2d(8, 8, 3, padding=1, bias=False),
                nn.BatchNorm2d(8),
            )
            self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            y = self.stem(x)
            y = torch.relu(y + self.block(y))
            y = self.down(y).mean(dim=(2, 3))
            return self.head(y)

    torch.manual_seed(0)
    net = TinyResNet()
    for module in net.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)
    return torch, net.eval()


def _quantized_resnet(tmp_path):
    """The model exported to ONNX and quantised by onnxruntime's quantize_static: QDQ format,
    uint8 activations, int8 weights per output channel, calibrated on random inputs."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    torch, net = _tiny_resnet()
    float_path, int8_path = tmp_path / "float.onnx", tmp_path / "int8.onnx"
    torch.onnx.export(
        net,
        torch.randn(1, 3, 8, 8),
        str(float_path),
        dynamo=False,
        opset_version=17,
        input_names=["x"],
        output_names=["y"],
    )

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.batches = iter(
                [{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(8)]
            )

        def get_next(self):
            return next(self.batches, None)

    quantization.quantize_static(
        str(float_path),
        str(int8_path),
        Calibration(),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=True,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    return onnx.load(str(int8_path))


def _output_step(model):
    """The quantisation step of the model's output: the scale of its last DequantizeLinear."""
    (last,) = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name]
    assert last.op_type == "DequantizeLinear"
    scales = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(scales[last.input[1]])


def test_qdq_resnet_matches_onnxruntime_int8_within_one_step(tmp_path):
    """DequantizeLinear of the int8 weights folds to float weights at import; each
    QuantizeLinear -> DequantizeLinear pair of the activations runs as qnn.quantize and its
    dequantisation, so DQ -> Conv -> Q is float compute on dequantised values whose result is
    quantised (what the QDQ model means). onnxruntime fuses the same pattern into QLinearConv
    with int32 accumulation; the two agree to one step of the output's scale (exactly, here)."""
    model = _quantized_resnet(tmp_path)
    assert {n.op_type for n in model.graph.node} >= {
        "QuantizeLinear",
        "DequantizeLinear",
        "Conv",
        "Add",
        "Gemm",
    }
    mod, params = from_onnx(model)
    assert calls(mod).count("qnn.quantize") >= 8  # every activation is quantised
    compiled = compile_graph(mod, params)
    step = _output_step(model)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = (rng.standard_normal((1, 3, 8, 8)) * rng.uniform(0.5, 3)).astype(np.float32)
        (expected,) = run_onnxruntime(model, {"x": x})
        np.testing.assert_allclose(compiled(x=x), expected, rtol=0, atol=step * 1.001)
