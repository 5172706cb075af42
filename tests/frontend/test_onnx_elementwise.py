"""Elementwise converters: structure of the imported call and agreement with onnxruntime."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import (
    INT64,
    calls,
    check_against_onnxruntime,
    make_model,
    single_op_model,
    tensor,
    the_call,
)

from tessel.frontend.onnx import from_onnx
from tessel.support.errors import UserError

UNARY = {
    "Relu": "nn.relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "Erf": "erf",
    "Exp": "exp",
    "Neg": "negative",
    "Abs": "abs",
    "Floor": "floor",
    "Ceil": "ceil",
}


@pytest.mark.parametrize(("op_type", "relay"), UNARY.items())
def test_unary(op_type, relay):
    mod = check_against_onnxruntime(single_op_model(op_type, {"x": (2, 3, 4)}))
    assert calls(mod) == [relay]


@pytest.mark.parametrize(("op_type", "relay"), [("Sqrt", "sqrt"), ("Log", "log")])
def test_unary_on_positive_inputs(op_type, relay):
    model = single_op_model(op_type, {"x": (3, 4)})
    x = np.random.default_rng(1).uniform(0.5, 4, (3, 4)).astype("float32")
    assert calls(check_against_onnxruntime(model, inputs={"x": x})) == [relay]


BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide"}


@pytest.mark.parametrize(("op_type", "relay"), BINARY.items())
def test_binary_broadcasts(op_type, relay):
    mod = check_against_onnxruntime(single_op_model(op_type, {"a": (2, 1, 4), "b": (3, 1)}))
    assert calls(mod) == [relay]


@pytest.mark.parametrize(
    ("op_type", "relay"),
    [
        ("Equal", "equal"),
        ("Less", "less"),
        ("Greater", "greater"),
        ("LessOrEqual", "less_equal"),
        ("GreaterOrEqual", "greater_equal"),
    ],
)
def test_comparisons_on_integers(op_type, relay):
    model = make_model(
        [helper.make_node(op_type, ["a", "b"], ["y"])],
        [tensor("a", (3, 4), INT64), tensor("b", (4,), INT64)],
        [tensor("y", (3, 4), TensorProto.BOOL)],
    )
    assert calls(check_against_onnxruntime(model)) == [relay]


def test_pow_with_an_integer_exponent_casts_it():
    model = single_op_model("Pow", {"x": (2, 3)}, initializers={"e": np.array(3, np.int64)})
    mod = check_against_onnxruntime(model)
    power = the_call(mod, "power")
    assert power.args[1].data.dtype == np.float32


def test_pow_of_positive_base_by_tensor():
    model = single_op_model("Pow", {"x": (2, 3), "e": (3,)})
    rng = np.random.default_rng(2)
    inputs = {
        "x": rng.uniform(0.5, 2, (2, 3)).astype("float32"),
        "e": rng.uniform(-2, 2, 3).astype("float32"),
    }
    check_against_onnxruntime(model, inputs=inputs)


@pytest.mark.parametrize(
    ("op_type", "relay"), [("Max", "maximum"), ("Min", "minimum"), ("Sum", "add")]
)
def test_variadic_chains(op_type, relay):
    model = single_op_model(op_type, {"a": (3,), "b": (2, 3), "c": (1,)})
    assert calls(check_against_onnxruntime(model)) == [relay, relay]


@pytest.mark.parametrize(("fmod", "relay"), [(0, "floor_mod"), (1, "mod")])
def test_mod(fmod, relay):
    model = make_model(
        [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
        [tensor("a", (6,), INT64), tensor("b", (6,), INT64)],
        [tensor("y", (6,), INT64)],
    )
    inputs = {"a": np.array([-7, 7, -7, 7, 5, -5]), "b": np.array([3, 3, -3, -3, 5, 2])}
    assert calls(check_against_onnxruntime(model, inputs=inputs)) == [relay]


def test_clip_with_constant_bounds():
    model = single_op_model(
        "Clip", {"x": (4, 5)}, initializers={"lo": np.float32(0.0), "hi": np.float32(6.0)}
    )
    mod = check_against_onnxruntime(model)
    assert dict(the_call(mod, "clip").attrs) == {"a_min": 0.0, "a_max": 6.0}


def test_clip_with_only_a_max():
    model = single_op_model(
        "Clip", {"x": (4, 5)}, initializers={"hi": np.float32(0.5)}, input_names=["x", "", "hi"]
    )
    mod = check_against_onnxruntime(model)
    assert the_call(mod, "clip").attrs["a_max"] == 0.5


def test_clip_with_bounds_from_the_graph():
    model = single_op_model("Clip", {"x": (4, 5), "lo": (), "hi": ()})
    inputs = {
        "x": np.linspace(-2, 2, 20, dtype="float32").reshape(4, 5),
        "lo": np.array(-0.5, "float32"),
        "hi": np.array(1.0, "float32"),
    }
    mod = check_against_onnxruntime(model, inputs=inputs)
    assert calls(mod) == ["maximum", "minimum"]


def test_hard_sigmoid_and_hard_swish():
    mod = check_against_onnxruntime(
        single_op_model("HardSigmoid", {"x": (2, 8)}, alpha=0.3, beta=0.4)
    )
    assert calls(mod) == ["multiply", "add", "clip"]
    mod = check_against_onnxruntime(single_op_model("HardSwish", {"x": (2, 8)}, opset=14))
    assert calls(mod) == ["multiply", "add", "clip", "multiply"]


def test_leaky_relu_and_gelu():
    mod = check_against_onnxruntime(single_op_model("LeakyRelu", {"x": (3, 3)}, alpha=0.2))
    assert the_call(mod, "nn.leaky_relu").attrs["alpha"] == pytest.approx(0.2)
    check_against_onnxruntime(single_op_model("Gelu", {"x": (3, 7)}, opset=20))
    check_against_onnxruntime(single_op_model("Gelu", {"x": (3, 7)}, opset=20, approximate="tanh"))


def test_reciprocal():
    model = single_op_model("Reciprocal", {"x": (5,)})
    inputs = {"x": np.array([1, 2, -4, 0.5, 8], dtype="float32")}
    assert calls(check_against_onnxruntime(model, inputs=inputs)) == ["divide"]


def test_where_with_equal_condition():
    nodes = [
        helper.make_node("Equal", ["m", "zero"], ["c"]),
        helper.make_node("Where", ["c", "fill", "x"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("m", (2, 4), INT64), tensor("x", (2, 4))],
        [tensor("y", (2, 4))],
        {"zero": np.array(0, np.int64), "fill": np.array(-1e4, np.float32)},
    )
    inputs = {"m": np.array([[0, 1, 0, 2], [3, 0, 0, 1]]), "x": np.ones((2, 4), "float32")}
    assert calls(check_against_onnxruntime(model, inputs=inputs)) == ["equal", "where"]


def test_cast():
    model = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=INT64)],
        [tensor("x", (6,))],
        [tensor("y", (6,), INT64)],
    )
    inputs = {"x": np.array([-2.7, -0.5, 0, 0.5, 1.9, 3], "float32")}
    mod = check_against_onnxruntime(model, inputs=inputs)
    assert dict(the_call(mod, "cast").attrs) == {"dtype": "int64"}


def test_identity_and_dropout_are_the_input():
    nodes = [
        helper.make_node("Identity", ["x"], ["a"]),
        helper.make_node("Dropout", ["a"], ["b", "mask"]),
        helper.make_node("Relu", ["b"], ["y"]),
    ]
    model = make_model(
        nodes, [tensor("x", (3,))], [tensor("y", (3,)), tensor("mask", (3,), TensorProto.BOOL)]
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["nn.relu"]


def test_dropout_in_training_mode_with_a_ratio_of_one_is_refused():
    model = single_op_model(
        "Dropout", {"x": (3,)}, initializers={"ratio": np.float32(1.0), "training": np.array(True)}
    )
    with pytest.raises(UserError, match=r"ratio 1.0 must lie in \[0, 1\)"):
        from_onnx(model)


def test_arithmetic_on_constants_folds():
    nodes = [helper.make_node("Sqrt", ["d"], ["s"]), helper.make_node("Div", ["x", "s"], ["y"])]
    model = make_model(
        nodes, [tensor("x", (2, 2))], [tensor("y", (2, 2))], {"d": np.array(64.0, np.float32)}
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["divide"]
    assert the_call(mod, "divide").args[1].data == np.float32(8.0)
