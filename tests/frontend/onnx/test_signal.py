"""Signal operators: windows and MelWeightMatrix (computed at import) against onnxruntime, DFT
(products with cos/sin matrices, compiled to C) against NumPy's FFT in float64."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import make_model, run_onnxruntime, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph


def _constant(name: str, value) -> object:
    array = numpy_helper.from_array(np.asarray(value))
    return helper.make_node("Constant", [], [name], value=array)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_window_matches_onnxruntime(op, periodic):
    nodes = [_constant("n", np.int64(10)), helper.make_node(op, ["n"], ["y"], periodic=periodic)]
    model = make_model(nodes, [], [tensor("y", None)], opset=17)
    mod, _ = from_onnx(model)
    (expected,) = run_onnxruntime(model, {})
    np.testing.assert_allclose(mod["main"].body.data, expected, rtol=1e-6, atol=1e-7)


def test_mel_weight_matrix_matches_onnxruntime():
    values = [np.int64(8), np.int64(16), np.int64(8192), np.float32(0.0), np.float32(4096.0)]
    names = ["bins", "length", "rate", "low", "high"]
    nodes = [_constant(n, v) for n, v in zip(names, values, strict=True)]
    nodes.append(helper.make_node("MelWeightMatrix", names, ["y"]))
    model = make_model(nodes, [], [tensor("y", None)], opset=17)
    mod, _ = from_onnx(model)
    (expected,) = run_onnxruntime(model, {})
    np.testing.assert_allclose(mod["main"].body.data, expected, rtol=1e-6)


def _dft_model(shape, **attrs):
    nodes = [
        _constant("axis", np.int64(1)),
        helper.make_node("DFT", ["x", "", "axis"], ["y"], **attrs),
    ]
    return make_model(nodes, [tensor("x", list(shape))], [tensor("y", None)], opset=20)


@pytest.mark.parametrize(
    ("last", "attrs", "fft"),
    [
        (1, {}, np.fft.fft),
        (2, {}, np.fft.fft),
        (2, {"inverse": 1}, np.fft.ifft),
        (1, {"onesided": 1}, np.fft.rfft),
    ],
)
def test_dft_in_c_matches_numpy_fft(last, attrs, fft):
    x = np.random.default_rng(0).standard_normal((2, 12, 3, last)).astype(np.float32)
    mod, params = from_onnx(_dft_model(x.shape, **attrs))
    y = compile_graph(mod, params)(x)
    signal = x[..., 0].astype(np.float64) + (1j * x[..., 1] if last == 2 else 0)
    expected = fft(signal, axis=1)
    np.testing.assert_allclose(y[..., 0], expected.real, atol=1e-5)
    np.testing.assert_allclose(y[..., 1], expected.imag, atol=1e-5)


def test_dft_on_its_last_axis_is_refused():
    nodes = [_constant("axis", np.int64(-1)), helper.make_node("DFT", ["x", "", "axis"], ["y"])]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [tensor("x", [2, 4, 2])], [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(OnnxImportError, match="axis"):
        from_onnx(model)
