"""Files that are no usable ONNX model: `from_onnx` raises one OnnxImportError naming the file and
the problem (never an empty model, a protobuf traceback or a bare OSError)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tessel.frontend.onnx import DynamicInputError, OnnxImportError, from_onnx
from tessel.support.errors import UserError


def _matmul(x_shape=(2, 4)):
    """y = x @ w with one initializer `w`."""
    w = numpy_helper.from_array(np.ones((4, 3), "float32"), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _import_error(model, **kwargs) -> OnnxImportError:
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model, **kwargs)
    assert isinstance(info.value, UserError)
    return info.value


def test_an_empty_file_is_refused_not_imported_as_an_empty_model(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    err = _import_error(path)
    assert err.rule == "onnx.empty-file"
    assert str(err).startswith(f"{path} is empty (0 bytes), not an ONNX model")


def test_a_file_that_is_not_onnx_is_named(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are my notes, not a model\n")
    err = _import_error(path)
    assert err.rule == "onnx.not-onnx"
    assert str(err).startswith(f"{path} is not an ONNX model")
    assert isinstance(err.__cause__, Exception)  # the protobuf error is kept as the cause


def test_a_missing_file_is_named(tmp_path):
    err = _import_error(tmp_path / "nothere.onnx")
    assert str(err).startswith(f"{tmp_path / 'nothere.onnx'}: no such file")


def test_a_model_without_a_graph_is_refused(tmp_path):
    path = tmp_path / "nograph.onnx"
    onnx.save(onnx.ModelProto(ir_version=8), path)
    err = _import_error(path)
    assert err.rule == "onnx.no-graph"
    assert str(err).startswith(f"{path} has no graph")


def test_a_graph_without_outputs_is_refused(tmp_path):
    model = _matmul()
    model.graph.ClearField("output")
    err = _import_error(model)
    assert err.rule == "onnx.no-outputs"
    assert str(err).startswith("the ModelProto: its graph `matmul` declares no outputs")
    path = tmp_path / "noout.onnx"
    onnx.save(model, path)
    assert str(_import_error(path)).startswith(f"{path}: its graph `matmul` declares no outputs")


def test_an_input_without_a_static_shape_names_the_file_and_the_shape_argument(tmp_path):
    path = tmp_path / "dynamic.onnx"
    onnx.save(_matmul(("batch", 4)), path)
    err = _import_error(path)
    assert isinstance(err, DynamicInputError)
    assert err.rule == "onnx.dynamic-input"
    assert str(err).startswith(f"{path}: graph input `x` has dynamic dimension 0 (`batch`)")
    assert "from_onnx(model, shape={'x': (1, 4)}), or by" in err.hint
    assert "dims={'batch': 1}" in err.hint
    assert "--shape" not in str(err)
    cli_hint = err.for_command_line().hint
    assert "--shape x=1x4, or by" in cli_hint and cli_hint.endswith("--dim batch=1")
    assert "from_onnx" not in cli_hint


def test_an_input_with_no_shape_at_all_needs_one():
    model = _matmul()
    model.graph.input[0].type.tensor_type.ClearField("shape")
    err = _import_error(model)
    assert isinstance(err, DynamicInputError)
    assert "graph input `x` has no shape in the model" in str(err)
    assert err.hint.endswith("shape={'x': (...)})")
    assert err.for_command_line().hint.endswith("--shape x=D1xD2x...")


def _save_with_external_data(model, path):
    onnx.save(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )


def test_external_data_beside_the_model_is_read(tmp_path):
    path = tmp_path / "external.onnx"
    _save_with_external_data(_matmul(), path)
    mod, _ = from_onnx(path)
    assert mod["main"].ret_type.shape == (2, 3)


def test_a_missing_external_data_file_names_the_initializer_and_the_file(tmp_path):
    path = tmp_path / "external.onnx"
    _save_with_external_data(_matmul(), path)
    (tmp_path / "weights.bin").unlink()
    err = _import_error(path)
    assert err.rule == "onnx.external-data"
    assert str(err).startswith(
        f"{path}: initializer `w` keeps its data in the external file `weights.bin`, which is "
        f"missing (looked for {tmp_path / 'weights.bin'})"
    )


def test_a_model_proto_whose_external_data_was_not_loaded_is_refused(tmp_path):
    path = tmp_path / "external.onnx"
    _save_with_external_data(_matmul(), path)
    model = onnx.load(str(path), load_external_data=False)
    err = _import_error(model)
    assert err.rule == "onnx.external-data"
    assert str(err).startswith(
        "the ModelProto's initializer `w` keeps its data in the external file `weights.bin`, "
        "which was not loaded"
    )


def test_an_empty_model_proto_is_refused():
    err = _import_error(onnx.ModelProto())
    assert err.rule == "onnx.not-onnx"
    assert str(err).startswith("the ModelProto is empty: it has no IR version and no graph")


def test_bytes_that_parse_as_an_empty_message_are_not_onnx(tmp_path):
    path = tmp_path / "odd.onnx"
    path.write_bytes(b"\x90\x01\x00")  # field 18, a varint: an unknown field, no graph
    err = _import_error(path)
    assert err.rule == "onnx.not-onnx"
    assert str(err).startswith(f"{path} is not an ONNX model: it has no IR version and no graph")
