"""Tile (accepted by the importer but once lowered to a graph op that did not exist) and Mod's
fmod rule for floats, against onnxruntime through the evaluator and the compiled C."""

import numpy as np
import pytest
from onnx_testing import calls, check_against_onnxruntime, single_op_model

from tessel.frontend.onnx import OnnxImportError, from_onnx


@pytest.mark.parametrize(
    ("shape", "repeats"),
    [((3,), (4,)), ((2, 3), (2, 1)), ((2, 3), (1, 3)), ((2, 1, 3), (2, 3, 2))],
)
def test_tile_matches_onnxruntime_compiled(shape, repeats):
    model = single_op_model(
        "Tile", {"x": shape}, initializers={"repeats": np.array(repeats, np.int64)}
    )
    mod = check_against_onnxruntime(model, compiled=True)
    assert set(calls(mod)) <= {"reshape", "broadcast_to"}  # no shape arithmetic, no "tile" op


def test_tile_by_ones_is_the_input_itself():
    model = single_op_model(
        "Tile", {"x": (2, 3)}, initializers={"repeats": np.array([1, 1], np.int64)}
    )
    assert calls(check_against_onnxruntime(model, compiled=True)) == []


def test_float_mod_with_fmod_0_is_refused_as_the_opset_says():
    model = single_op_model("Mod", {"a": (4,), "b": (4,)}, fmod=0)
    with pytest.raises(OnnxImportError, match="fmod=0 .* integers only"):
        from_onnx(model)


def test_float_mod_with_fmod_1_matches_onnxruntime():
    model = single_op_model("Mod", {"a": (8,), "b": (8,)}, fmod=1)
    check_against_onnxruntime(model, compiled=True)
