"""Rules of the importer itself: values needed at import, training-mode Dropout, opset tables."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import make_model, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.frontend.onnx.backend import TesselBackend
from tessel.frontend.onnx.errors import ValueNeededError
from tessel.graph.op.random import RANDOM_STATE


def _dropout_model(ratio: float):
    nodes = [
        helper.make_node("Constant", [], ["r"], value=numpy_helper.from_array(np.float32(ratio))),
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.bool_(True))),
        helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"]),
    ]
    return make_model(
        nodes, [tensor("x", [2, 3])], [tensor("y", None), tensor("mask", None, TensorProto.BOOL)]
    )


def test_training_dropout_with_ratio_zero_drops_nothing():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    y, mask = TesselBackend.run_model(_dropout_model(0.0), [x])
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.bool_
    assert mask.all()


def test_training_dropout_that_drops_draws_from_the_random_state():
    mod, _ = from_onnx(_dropout_model(0.5))
    assert mod["main"].params[-1].name_hint == RANDOM_STATE


def _reshape_by_input():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    return make_model(
        [node], [tensor("x", [2, 6]), tensor("shape", [2], TensorProto.INT64)], [tensor("y", None)]
    )


def test_a_shape_given_as_a_graph_input_names_that_input():
    with pytest.raises(ValueNeededError, match=r"graph inputs \['shape'\]") as err:
        from_onnx(_reshape_by_input())
    assert err.value.inputs == ("shape",)


def test_the_backend_compiles_per_value_of_an_input_the_import_needs():
    rep = TesselBackend.prepare(_reshape_by_input())
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    (y,) = rep.run([x, np.array([3, 4])])
    np.testing.assert_array_equal(y, x.reshape(3, 4))
    (y,) = rep.run({"x": x, "shape": np.array([4, -1])})
    np.testing.assert_array_equal(y, x.reshape(4, 3))
    assert rep.value_inputs == ("shape",)


def test_the_backend_refuses_other_devices_and_bad_inputs():
    assert not TesselBackend.supports_device("CUDA")
    with pytest.raises(OnnxImportError, match="device"):
        TesselBackend.prepare(_reshape_by_input(), "CUDA")
    rep = TesselBackend.prepare(_reshape_by_input())
    with pytest.raises(ValueError, match="takes 2 inputs"):
        rep.run([np.zeros((2, 6), np.float32)])
