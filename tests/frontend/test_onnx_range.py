"""Range with 1-element inputs: the spec wants scalars and ONNX's inference refuses [1]-shaped
ones, but exporters (ONNX's own expanded AffineGrid) give them and onnxruntime accepts shape [1];
Tessel reads them as their scalars too, and still refuses every other shape."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import make_model, run_onnxruntime, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.frontend.onnx.backend import TesselBackend
from tessel.graph.executor import compile as compile_graph


def _constant(name, value):
    array = numpy_helper.from_array(np.asarray(value))
    return helper.make_node("Constant", [], [name], value=array)


def _range_model(start, limit, delta):
    """Range of constants (of the shapes given), times graph input x."""
    nodes = [_constant(n, v) for n, v in zip("sld", (start, limit, delta), strict=True)]
    nodes.append(helper.make_node("Range", ["s", "l", "d"], ["r"]))
    nodes.append(helper.make_node("Mul", ["r", "x"], ["y"]))
    count = int(np.ceil((np.ravel(limit)[0] - np.ravel(start)[0]) / np.ravel(delta)[0]))
    elem = helper.np_dtype_to_tensor_dtype(np.asarray(start).dtype)
    graph = helper.make_graph(nodes, "g", [tensor("x", [1], elem)], [tensor("y", [count], elem)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


CASES = [
    (np.array([1.0], np.float32), np.array([5.0], np.float32), np.array([0.75], np.float32)),
    (np.array([10], np.int64), np.int64(-3), np.array([-4], np.int64)),  # scalars and [1]
    (np.int32(2), np.array([9], np.int32), np.int32(3)),
]


@pytest.mark.parametrize(("start", "limit", "delta"), CASES)
def test_one_element_vectors_are_read_as_scalars(start, limit, delta):
    mod, params = from_onnx(_range_model(start, limit, delta))
    x = np.full(1, 2, np.asarray(start).dtype)
    expected = np.arange(start.item(), limit.item(), delta.item(), dtype=x.dtype) * 2
    np.testing.assert_array_equal(compile_graph(mod, params)(x=x), expected)


@pytest.mark.parametrize(("start", "limit", "delta"), CASES)
def test_one_element_graph_inputs_match_onnxruntime(start, limit, delta):
    # onnxruntime refuses [1]-shaped constants (its inference sees their values) but runs [1]
    # graph inputs; Tessel's backend binds the values the import needs, as in ONNX's suite.
    arrays = [np.asarray(v) for v in (start, limit, delta)]
    elem = helper.np_dtype_to_tensor_dtype(arrays[0].dtype)
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    inputs = [tensor(n, list(a.shape), elem) for n, a in zip("sld", arrays, strict=True)]
    graph = helper.make_graph([node], "g", inputs, [tensor("y", ["n"], elem)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    values = dict(zip("sld", arrays, strict=True))
    (expected,) = run_onnxruntime(model, values)
    (result,) = TesselBackend.prepare(model, "CPU").run(values)
    np.testing.assert_array_equal(result, expected)
    assert result.dtype == expected.dtype


@pytest.mark.parametrize("shape", [(1, 1), (2,)])
def test_other_shapes_are_still_refused_naming_range(shape):
    # onnxruntime refuses these too ("should be scalar like tensor").
    start = np.zeros(shape, np.float32)
    model = _range_model(start, np.array(4, np.float32), np.array(1, np.float32))
    with pytest.raises(OnnxImportError, match="Range node .*scalar"):
        from_onnx(model)


def test_scalar_range_is_unchanged():
    nodes = [_constant("s", np.int64(0)), _constant("l", np.int64(5)), _constant("d", np.int64(2)),
             helper.make_node("Range", ["s", "l", "d"], ["y"])]  # fmt: skip
    model = make_model(nodes, [], [tensor("y", [3], TensorProto.INT64)])
    mod, _ = from_onnx(model)
    np.testing.assert_array_equal(mod["main"].body.data, [0, 2, 4])
