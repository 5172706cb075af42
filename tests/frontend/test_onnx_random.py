"""ONNX's random operators imported and compiled: the model's random state is a hidden input the
executor fills, shapes and dtypes follow ONNX's rules, draws follow their distributions, and
training-mode Dropout keeps 1 - ratio of the elements, scaled."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import make_model

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.backend import TesselBackendRep
from tessel.graph.executor import compile as compile_graph
from tessel.graph.op.random import RANDOM_STATE


def _model(op, inputs, outputs, opset=15, **attrs):
    node = helper.make_node(op, [n for n, *_ in inputs], [n for n, *_ in outputs], **attrs)
    return make_model(
        [node],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        opset=opset,
    )


def test_random_normal_like_takes_its_input_shape_and_hides_the_state():
    model = _model(
        "RandomNormalLike",
        [("x", TensorProto.DOUBLE, [200, 50])],
        [("y", TensorProto.DOUBLE, [200, 50])],
        mean=2.0,
        scale=0.25,
    )
    mod, _ = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["x", RANDOM_STATE]
    compiled = compile_graph(mod)
    assert [i.name for i in compiled.inputs] == ["x"]
    y = compiled(x=np.zeros((200, 50)))
    assert y.dtype == np.float64 and abs(y.mean() - 2) < 0.01 and abs(y.std() - 0.25) < 0.01


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE])
def test_random_uniform_of_each_float_type(dtype):
    model = _model(
        "RandomUniform", [], [("y", dtype, [1000])], shape=[1000], low=-1.0, high=1.0, dtype=dtype
    )
    y = compile_graph(from_onnx(model)[0])()
    assert y.shape == (1000,) and -1 <= y.min() and y.max() <= 1 and abs(y.mean()) < 0.1


def test_bernoulli_and_multinomial_draw_with_their_probabilities():
    probs = np.array([0.0, 0.25, 0.9, 1.0], np.float32)
    model = _model("Bernoulli", [("p", TensorProto.FLOAT, [4])], [("y", TensorProto.FLOAT, [4])])
    compiled = compile_graph(from_onnx(model)[0])
    draws = np.stack([compiled(p=probs) for _ in range(400)])
    np.testing.assert_allclose(draws.mean(axis=0), probs, atol=0.06)
    logits = np.log(np.array([[0.1, 0.9], [0.5, 0.5]], np.float32))
    model = _model(
        "Multinomial",
        [("x", TensorProto.FLOAT, [2, 2])],
        [("y", TensorProto.INT64, [2, 5000])],
        opset=7,
        sample_size=5000,
        dtype=TensorProto.INT64,
    )
    y = compile_graph(from_onnx(model)[0])(x=logits)
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1}
    np.testing.assert_allclose(y.mean(axis=1), [0.9, 0.5], atol=0.03)


def test_training_dropout_keeps_and_scales_as_its_mask_says():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=1)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100, 100])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [100, 100]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [100, 100]),
        ],
        initializers={"r": np.array(0.3, np.float32), "t": np.array(True)},
        opset=13,
    )
    x = np.random.default_rng(0).standard_normal((100, 100)).astype(np.float32)
    y, mask = compile_graph(from_onnx(model)[0])(x=x)
    assert abs(mask.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y, np.where(mask, x / np.float32(0.7), 0), rtol=1e-6)


def test_the_backend_starts_every_model_from_the_same_state():
    model = _model("RandomUniform", [], [("y", TensorProto.FLOAT, [6])], shape=[6])
    a, b = TesselBackendRep(model), TesselBackendRep(model)
    np.testing.assert_array_equal(a.run([])[0], b.run([])[0])
