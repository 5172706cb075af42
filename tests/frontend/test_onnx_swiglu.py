"""SwiGLU (opset 28): Swish_alpha(A) * B against NumPy and ONNX's reference (its function body;
onnxruntime 1.23 has no kernel for it), compiled to C, in float32, float64 and float16."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import calls, make_model, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph


def _model(shape, elem=TensorProto.FLOAT, b_shape=None, **attrs):
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], **attrs)
    inputs = [tensor("a", list(shape), elem), tensor("b", list(b_shape or shape), elem)]
    return make_model([node], inputs, [tensor("y", list(shape), elem)], opset=28)


def _swiglu(a, b, alpha=1.0):
    """The spec's formula in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return a / (1 + np.exp(-alpha * a)) * b


@pytest.mark.parametrize(
    ("dtype", "elem", "alpha", "atol"),
    [
        (np.float32, TensorProto.FLOAT, None, 1e-6),
        (np.float32, TensorProto.FLOAT, 0.5, 1e-6),
        (np.float64, TensorProto.DOUBLE, 1.702, 1e-12),
        (np.float16, TensorProto.FLOAT16, None, 2e-3),
    ],
)
def test_swiglu_matches_numpy_and_onnx_reference(dtype, elem, alpha, atol):
    attrs = {} if alpha is None else {"alpha": alpha}
    model = _model((3, 2, 8), elem, **attrs)
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-6, 6, (3, 2, 8)).astype(dtype) for _ in range(2))
    mod, params = from_onnx(model)
    result = compile_graph(mod, params)(a=a, b=b)
    assert result.dtype == dtype
    # ONNX's float attributes are float32: alpha 1.702 is 1.70200002...
    expected = _swiglu(a, b, 1.0 if alpha is None else float(np.float32(alpha)))
    np.testing.assert_allclose(result, expected, atol=atol * np.abs(expected).max(), rtol=0)
    (reference,) = ReferenceEvaluator(model).run(None, {"a": a, "b": b})
    np.testing.assert_allclose(result, reference, atol=atol * np.abs(expected).max(), rtol=0)


def test_swiglu_of_float16_runs_in_float32():
    mod, _ = from_onnx(_model((4,), TensorProto.FLOAT16))
    assert calls(mod).count("cast") == 3
    assert calls(mod)[-1] == "cast"


def test_swiglu_saturates_without_nan():
    a = np.array([-1e4, -100, 0, 100, 1e4], np.float32)
    mod, params = from_onnx(_model((5,)))
    result = compile_graph(mod, params)(a=a, b=np.ones(5, np.float32))
    np.testing.assert_allclose(result, [0, 0, 0, 100, 1e4], atol=1e-6)


@pytest.mark.parametrize("b_shape", [[1, 3], [3]])
def test_swiglu_of_different_shapes_is_refused(b_shape):
    # The spec applies no broadcasting, though its function body's Mul would.
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node], "g", [tensor("a", [2, 3]), tensor("b", b_shape)], [tensor("y", None)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    with pytest.raises(OnnxImportError, match="SwiGLU node "):
        from_onnx(model)


def test_swiglu_of_integers_is_refused():
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"])
    inputs = [tensor("a", [2], TensorProto.INT32), tensor("b", [2], TensorProto.INT32)]
    graph = helper.make_graph([node], "g", inputs, [tensor("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    with pytest.raises(OnnxImportError, match="SwiGLU"):
        from_onnx(model)
