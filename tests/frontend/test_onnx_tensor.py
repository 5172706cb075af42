"""Layout and indexing converters: Reshape, Flatten, Squeeze, Unsqueeze, Expand, Transpose,
Concat, Split, Tile, Pad, Gather."""

import numpy as np
import pytest
from onnx import helper
from onnx_testing import (
    INT64,
    calls,
    check_against_onnxruntime,
    make_model,
    single_op_model,
    tensor,
    the_call,
)

from tessel.frontend.onnx import OnnxImportError, from_onnx


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ([0, -1], (2, 12)),
        ([-1, 4], (6, 4)),
        ([0, 0, 2, 2], (2, 3, 2, 2)),
        ([24], (24,)),
    ],
)
def test_reshape_zero_and_minus_one(target, expected):
    model = single_op_model("Reshape", {"x": (2, 3, 4)}, initializers={"s": np.array(target)})
    mod = check_against_onnxruntime(model)
    assert dict(the_call(mod, "reshape").attrs) == {"newshape": expected}


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    model = single_op_model("Flatten", {"x": (2, 3, 4)}, axis=axis)
    check_against_onnxruntime(model)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_and_unsqueeze_axes_by_opset(opset):
    axes = np.array([1, -1])
    if opset >= 13:
        nodes = [
            helper.make_node("Squeeze", ["x", "axes"], ["s"]),
            helper.make_node("Unsqueeze", ["s", "axes2"], ["y"]),
        ]
        inits = {"axes": axes, "axes2": np.array([0, 3])}
    else:
        nodes = [
            helper.make_node("Squeeze", ["x"], ["s"], axes=[1, -1]),
            helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, 3]),
        ]
        inits = {}
    model = make_model(
        nodes, [tensor("x", (2, 1, 3, 1))], [tensor("y", (1, 2, 3, 1))], inits, opset
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["squeeze", "reshape"]
    assert the_call(mod, "squeeze").attrs["axis"] == (1, 3)


def test_squeeze_without_axes_and_single_unsqueeze():
    nodes = [
        helper.make_node("Squeeze", ["x"], ["s"]),
        helper.make_node("Unsqueeze", ["s", "axes"], ["y"]),
    ]
    model = make_model(
        nodes, [tensor("x", (1, 3, 1))], [tensor("y", (3, 1))], {"axes": np.array([-1])}
    )
    mod = check_against_onnxruntime(model)
    assert dict(the_call(mod, "expand_dims").attrs) == {"axis": 1, "num_newaxis": 1}


@pytest.mark.parametrize(
    ("shape", "target"), [((3, 1), (2, 3, 4)), ((1, 4), (3, 1)), ((2, 3), (2, 3))]
)
def test_expand_is_two_way_broadcast(shape, target):
    model = single_op_model("Expand", {"x": shape}, initializers={"s": np.array(target)})
    mod = check_against_onnxruntime(model)
    out_shape = tuple(np.broadcast_shapes(shape, target))
    if out_shape == shape:
        assert calls(mod) == []
    else:
        assert dict(the_call(mod, "broadcast_to").attrs) == {"shape": out_shape}


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": perm}
    mod = check_against_onnxruntime(single_op_model("Transpose", {"x": (2, 3, 4)}, **attrs))
    assert the_call(mod, "transpose").attrs["axes"] == tuple(perm or (2, 1, 0))


def test_concat_with_a_constant():
    model = single_op_model(
        "Concat", {"a": (2, 3)}, initializers={"b": np.ones((2, 1), "float32")}, axis=-1
    )
    mod = check_against_onnxruntime(model)
    assert the_call(mod, "concatenate").attrs["axis"] == 1


@pytest.mark.parametrize(
    ("opset", "how"), [(11, "attr"), (13, "input"), (13, "equal"), (18, "num")]
)
def test_split(opset, how):
    attrs, inits, count = {"axis": 1}, {}, 3
    if how == "attr":
        attrs["split"] = [1, 2, 3]
    elif how == "input":
        inits["split"] = np.array([1, 2, 3])
    elif how == "num":
        attrs["num_outputs"], count = 4, 4
    model = single_op_model(
        "Split", {"x": (2, 6)}, output_count=count, initializers=inits, opset=opset, **attrs
    )
    mod = check_against_onnxruntime(model)
    split = the_call(mod, "split")
    expected = {"attr": (1, 3), "input": (1, 3), "equal": (2, 4), "num": (2, 4, 6)}[how]
    assert dict(split.attrs) == {"indices_or_sections": expected, "axis": 1}


def test_tile():
    model = single_op_model("Tile", {"x": (2, 3)}, initializers={"r": np.array([2, 1])})
    mod = check_against_onnxruntime(model, compiled=True)  # lowered to reshape + broadcast_to
    assert calls(mod) == ["reshape", "broadcast_to", "reshape"]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_modes(mode):
    model = single_op_model(
        "Pad",
        {"x": (1, 2, 4, 5)},
        initializers={"p": np.array([0, 0, 1, 2, 0, 0, 2, 1])},
        mode=mode,
    )
    mod = check_against_onnxruntime(model)
    pad = the_call(mod, "nn.pad")
    assert dict(pad.attrs) == {"pad_width": ((0, 0), (0, 0), (1, 2), (2, 1)), "pad_mode": mode}


def test_pad_value_and_axes_input():
    model = single_op_model(
        "Pad",
        {"x": (3, 4)},
        opset=18,
        initializers={"p": np.array([1, 2]), "v": np.array(1.5, "float32"), "axes": np.array([-1])},
    )
    mod = check_against_onnxruntime(model)
    pad = the_call(mod, "nn.pad")
    assert pad.attrs["pad_width"] == ((0, 0), (1, 2))
    assert pad.args[1].data == np.float32(1.5)


@pytest.mark.parametrize(
    ("mode", "pads"),
    [
        ("wrap", [1, 5, 2, 0]),
        ("reflect", [0, 3, -1, 2]),
        ("edge", [-1, 2, 0, -2]),
        ("constant", [2, -1, -1, 3]),
    ],
)
def test_pad_wide_wrap_and_negative(mode, pads):
    """Widths past the axis (wrap, reflect) and negative widths (crops) in every mode."""
    model = single_op_model(
        "Pad", {"x": (3, 4)}, opset=19, initializers={"p": np.array(pads)}, mode=mode
    )
    check_against_onnxruntime(model, compiled=mode == "wrap")


def test_pad_attributes_before_opset_11():
    model = single_op_model("Pad", {"x": (2, 3)}, opset=10, pads=[0, 1, 1, 2], value=2.5)
    pad = the_call(check_against_onnxruntime(model), "nn.pad")
    assert pad.attrs["pad_width"] == ((0, 1), (1, 2))
    assert pad.args[1].data == np.float32(2.5)


def test_pad_of_an_empty_axis_in_edge_mode_is_refused():
    model = single_op_model(
        "Pad", {"x": (0, 2)}, opset=19, initializers={"p": np.array([1, 0, 0, 0])}, mode="edge"
    )
    with pytest.raises(OnnxImportError, match="extent 0"):
        from_onnx(model)


def test_reshape_allowzero_makes_a_zero_size_dimension():
    """Regression: with allowzero=1 a 0 in the shape is an extent of 0, not "copy this one"."""
    model = single_op_model(
        "Reshape", {"x": (0, 3, 4)}, opset=14, allowzero=1, initializers={"s": np.array([3, 4, 0])}
    )
    mod = check_against_onnxruntime(model, compiled=True)
    assert dict(the_call(mod, "reshape").attrs) == {"newshape": (3, 4, 0), "allowzero": True}


def test_unsqueeze_and_tile_of_an_empty_tensor():
    """Reshapes to explicit shapes holding 0 keep the 0 (no Relay "copy" code)."""
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axes"], ["u"]),
        helper.make_node("Tile", ["u", "r"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", (2, 0))],
        [tensor("y", (2, 2, 0, 1))],
        {"axes": np.array([0, 3]), "r": np.array([2, 1, 3, 1])},
    )
    check_against_onnxruntime(model)


def test_eye_like_is_known_at_import():
    model = single_op_model("EyeLike", {"x": (3, 4)}, k=1, dtype=INT64)
    mod = check_against_onnxruntime(model)
    assert calls(mod) == []


def test_det_of_2x2_and_3x3_matrices():
    for shape in [(2, 2, 2), (3, 3)]:
        check_against_onnxruntime(single_op_model("Det", {"x": shape}), rtol=1e-4)


def test_gather_embedding_with_graph_indices():
    table = np.random.default_rng(0).standard_normal((10, 4)).astype("float32")
    model = make_model(
        [helper.make_node("Gather", ["table", "ids"], ["y"])],
        [tensor("ids", (2, 3), INT64)],
        [tensor("y", (2, 3, 4))],
        {"table": table},
    )
    inputs = {"ids": np.array([[0, 9, -1], [-10, 3, 4]])}
    mod = check_against_onnxruntime(model, inputs=inputs)
    assert calls(mod) == ["less", "add", "where", "take"]


@pytest.mark.parametrize("indices", [np.array(1), np.array([-1, 0]), np.array([[2, -3], [0, 1]])])
def test_gather_constant_indices_are_normalised(indices):
    model = single_op_model("Gather", {"x": (2, 3, 4)}, initializers={"i": indices}, axis=1)
    mod = check_against_onnxruntime(model)
    take = the_call(mod, "take")
    assert take.attrs["axis"] == 1
    assert (take.args[1].data >= 0).all()


def test_gather_out_of_range_is_an_error():
    model = single_op_model("Gather", {"x": (2, 3)}, initializers={"i": np.array([3])}, axis=1)
    with pytest.raises(OnnxImportError, match="out of range"):
        from_onnx(model)
