"""The converters of converters/math.py (trigonometric, rounding, activations, bitwise, BitShift,
Mean, CastLike, BitCast) and the integer and opset-28 cases of elementwise.py, against
onnxruntime and NumPy, compiled to C."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import calls, check_against_onnxruntime, make_model, tensor

from tessel.frontend.onnx import from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.support.errors import UserError

FLOAT = TensorProto.FLOAT

# op type -> the interval its random inputs come from
TRIGONOMETRIC = {
    "Sin": (-7, 7), "Cos": (-7, 7), "Tan": (-1.5, 1.5), "Asin": (-1, 1), "Acos": (-1, 1),
    "Atan": (-20, 20), "Sinh": (-5, 5), "Cosh": (-5, 5), "Asinh": (-50, 50), "Acosh": (1, 50),
    "Atanh": (-0.99, 0.99),
}  # fmt: skip


def _unary_model(op_types, shape, opset, elem_type=FLOAT, **attrs):
    """One node per op type, each reading its own input `x<k>` and writing `y<k>`."""
    nodes = [helper.make_node(op, [f"x{k}"], [f"y{k}"], **attrs) for k, op in enumerate(op_types)]
    inputs = [tensor(f"x{k}", shape, elem_type) for k in range(len(op_types))]
    outputs = [tensor(f"y{k}", shape, elem_type) for k in range(len(op_types))]
    return make_model(nodes, inputs, outputs, opset=opset)


def _run_compiled(model, inputs):
    mod, params = from_onnx(model)
    result = compile_graph(mod, params)(**inputs)
    return list(result) if isinstance(result, tuple) else [result]


def test_trigonometric_and_hyperbolic_functions():
    model = _unary_model(list(TRIGONOMETRIC), (3, 4), opset=22)
    rng = np.random.default_rng(0)
    inputs = {
        f"x{k}": rng.uniform(lo, hi, (3, 4)).astype("float32")
        for k, (lo, hi) in enumerate(TRIGONOMETRIC.values())
    }
    mod = check_against_onnxruntime(model, inputs=inputs, compiled=True)
    assert calls(mod) == [op.lower() for op in TRIGONOMETRIC]


def test_inverse_hyperbolic_functions_keep_their_digits():
    """Tiny, huge and near-1 arguments, where the textbook log formulas cancel or overflow."""
    x = np.array([1e-30, -3e-8, 0.5, -0.9999, 2.5, -1e5, 3e30, -0.0, np.nan], "float32")
    above_one = np.array([1.0, 1 + 1e-6, 1.5, 2.0, 2.5, 1e5, 3e30, np.inf, 0.5], "float32")
    model = _unary_model(["Asinh", "Acosh", "Atanh"], (9,), opset=22)
    inputs = {"x0": x, "x1": above_one, "x2": np.clip(x, -1, 1)}
    got = _run_compiled(model, inputs)
    with np.errstate(all="ignore"):
        expected = [np.arcsinh(x), np.arccosh(above_one), np.arctanh(inputs["x2"])]
    for ours, ref in zip(got, expected, strict=True):
        np.testing.assert_allclose(ours, ref, rtol=2e-6, atol=0)
    # odd functions keep the sign of zero
    assert np.signbit(got[0][7])
    assert np.signbit(got[2][7])


def test_round_halves_to_even_and_sign_keeps_nan():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.0, np.nan, 7.0], "float32")
    got = _run_compiled(_unary_model(["Round", "Sign"], (9,), opset=22), {"x0": x, "x1": x.copy()})
    np.testing.assert_array_equal(got[0], np.round(x))
    np.testing.assert_array_equal(got[1], np.sign(x))


ACTIVATIONS = [
    ("Softplus", {}),
    ("Softsign", {}),
    ("Elu", {"alpha": 0.7}),
    ("Selu", {}),
    ("Celu", {"alpha": 1.5}),
    ("ThresholdedRelu", {"alpha": 0.3}),
    ("Mish", {}),
    ("Shrink", {"lambd": 0.6, "bias": 0.25}),
]


def test_activations():
    nodes = [
        helper.make_node(op, ["x"], [f"y{k}"], **attrs) for k, (op, attrs) in enumerate(ACTIVATIONS)
    ]
    outputs = [tensor(f"y{k}", (4, 6)) for k in range(len(ACTIVATIONS))]
    model = make_model(nodes, [tensor("x", (4, 6))], outputs, opset=22)
    x = np.linspace(-40, 40, 24, dtype="float32").reshape(4, 6)
    x[0, :4] = [-0.6, 0.6, 0.3, -1e-3]
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


def test_swish_at_opset_24():
    model = _unary_model(["Swish"], (2, 5), opset=24, alpha=0.8)
    check_against_onnxruntime(model, compiled=True)


def test_prelu_broadcasts_the_slope_to_the_input():
    model = make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["y"])],
        [tensor("x", (2, 3, 4)), tensor("slope", (3, 1))],
        [tensor("y", (2, 3, 4))],
        opset=16,
    )
    check_against_onnxruntime(model, compiled=True)


def test_bitwise_operators_broadcast():
    ops = ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]
    nodes = [helper.make_node(op, ["a", "b"], [f"y{k}"]) for k, op in enumerate(ops)]
    nodes.append(helper.make_node("BitwiseNot", ["a"], ["y3"]))
    int16 = TensorProto.INT16
    model = make_model(
        nodes,
        [tensor("a", (2, 3, 4), int16), tensor("b", (3, 1), int16)],
        [tensor(f"y{k}", (2, 3, 4), int16) for k in range(4)],
        opset=18,
    )
    rng = np.random.default_rng(1)
    inputs = {
        "a": rng.integers(-30000, 30000, (2, 3, 4)).astype("int16"),
        "b": rng.integers(-30000, 30000, (3, 1)).astype("int16"),
    }
    assert calls(check_against_onnxruntime(model, inputs=inputs, compiled=True)) == [
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
    ]


@pytest.mark.parametrize("elem_type", [TensorProto.INT8, TensorProto.UINT32])
def test_bit_shift_defines_every_amount(elem_type):
    """Opset 28: amounts < 0 or >= the width give 0, or -1 shifting a negative value right."""
    dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    nodes = [
        helper.make_node("BitShift", ["x", "n"], [f"y{k}"], direction=d)
        for k, d in enumerate(["LEFT", "RIGHT"])
    ]
    model = make_model(
        nodes,
        [tensor("x", (12,), elem_type), tensor("n", (12,), elem_type)],
        [tensor(f"y{k}", (12,), elem_type) for k in range(2)],
        opset=28,
    )
    bits = np.dtype(dtype).itemsize * 8
    x = np.array([1, 3, 127, 100, 5, 64, 2, 1, 9, 12, 33, 7]).astype(dtype)
    if dtype == np.int8:
        x[6:] = [-1, -128, -5, -100, -64, -7]
    n = np.array([0, 1, 1, bits - 1, bits, bits + 3, 1, bits - 1, bits, 200, 2, 5]).astype(dtype)
    if dtype == np.int8:
        n[10:] = [-1, -100]
    check_against_onnxruntime(model, inputs={"x": x, "n": n}, compiled=True)


@pytest.mark.parametrize(
    ("base", "exponent"),
    [(TensorProto.INT32, TensorProto.INT32), (TensorProto.INT64, TensorProto.FLOAT)],
)
def test_pow_of_an_integer_base(base, exponent):
    """Regression: an integer base was refused at compile ('power needs a float dtype')."""
    model = make_model(
        [helper.make_node("Pow", ["x", "e"], ["y"])],
        [tensor("x", (6,), base), tensor("e", (6,), exponent)],
        [tensor("y", (6,), base)],
        opset=15,
    )
    x = np.array([2, -3, 7, 0, 1, -2], helper.tensor_dtype_to_np_dtype(base))
    e = np.array([10, 3, 2, 5, 0, 1], helper.tensor_dtype_to_np_dtype(exponent))
    if exponent == TensorProto.FLOAT:
        e[3] = 0.5  # 0 ** 0.5
    check_against_onnxruntime(model, inputs={"x": x, "e": e}, compiled=True)


def test_mean_of_broadcast_inputs():
    model = make_model(
        [helper.make_node("Mean", ["a", "b", "c"], ["y"])],
        [tensor("a", (2, 3)), tensor("b", (3,)), tensor("c", (1, 1))],
        [tensor("y", (2, 3))],
        opset=13,
    )
    assert calls(check_against_onnxruntime(model, compiled=True)) == ["add", "add", "divide"]


def _mod_model(opset, fmod):
    return make_model(
        [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)],
        [tensor("a", (12,)), tensor("b", (12,))],
        [tensor("y", (12,))],
        opset=opset,
    )


def test_float_mod_with_the_divisors_sign_at_opset_28():
    """The special cases of opset 28, and fmod's exactness: 5 % 0.1f is 0.0999999, where
    a - floor(a / b) * b gives 0 (regression: floor_mod on floats rounded)."""
    inf, nan = np.inf, np.nan
    a = np.array([5, -7, 7, 0.0, -0.0, inf, 3, 3, -3, nan, 2, 5], "float32")
    b = np.array([0.1, 3, -3, -2, 2, 2, inf, -inf, inf, 1, 0, 0.1], "float32")
    got = _run_compiled(_mod_model(28, fmod=0), {"a": a, "b": b})[0]
    with np.errstate(invalid="ignore"):
        expected = np.mod(a, b)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_float_mod_with_the_divisors_sign_is_refused_before_opset_28():
    with pytest.raises(UserError, match="before opset 28"):
        from_onnx(_mod_model(27, fmod=0))


def test_cast_like_takes_the_targets_dtype():
    model = make_model(
        [helper.make_node("CastLike", ["x", "like"], ["y"])],
        [tensor("x", (2, 3)), tensor("like", (1,), TensorProto.INT32)],
        [tensor("y", (2, 3), TensorProto.INT32)],
        opset=21,
    )
    x = np.array([[-2.7, -0.5, 0], [0.5, 1.9, 300]], "float32")
    inputs = {"x": x, "like": np.zeros(1, "int32")}
    assert calls(check_against_onnxruntime(model, inputs=inputs, compiled=True)) == ["cast"]


def test_not_at_opset_1():
    model = _unary_model(["Not"], (2, 3), opset=1, elem_type=TensorProto.BOOL)
    check_against_onnxruntime(model, compiled=True)


def test_bit_cast_keeps_the_bits():
    nodes = [
        helper.make_node("BitCast", ["a"], ["y0"], to=TensorProto.UINT8),
        helper.make_node("BitCast", ["b"], ["y1"], to=TensorProto.INT32),
    ]
    model = make_model(
        nodes,
        [tensor("a", (4,), TensorProto.INT8), tensor("b", (4,))],
        [tensor("y0", (4,), TensorProto.UINT8), tensor("y1", (4,), TensorProto.INT32)],
        opset=26,
    )
    a = np.array([-128, -1, 0, 127], "int8")
    b = np.array([1.5, -0.0, np.nan, -np.inf], "float32")
    got = _run_compiled(model, {"a": a, "b": b})
    np.testing.assert_array_equal(got[0], a.view("uint8"))
    np.testing.assert_array_equal(got[1], b.view("int32"))


def test_bit_cast_of_bools_is_refused():
    model = make_model(
        [helper.make_node("BitCast", ["a"], ["y"], to=TensorProto.UINT8)],
        [tensor("a", (4,), TensorProto.BOOL)],
        [tensor("y", (4,), TensorProto.UINT8)],
        opset=26,
    )
    with pytest.raises(UserError, match="BitCast"):
        from_onnx(model)


def test_integer_division_of_constants_truncates():
    """Regression: folding -128 / 2 in int8 gave 64 (|a| // |b| overflows at the minimum)."""
    int8 = TensorProto.INT8
    model = make_model(
        [helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Add", ["q", "x"], ["y"])],
        [tensor("x", (4,), int8)],
        [tensor("y", (4,), int8)],
        {"a": np.array([-128, -7, 7, 127], "int8"), "b": np.array([2, 2, -2, -1], "int8")},
        opset=14,
    )
    x = np.zeros(4, "int8")
    np.testing.assert_array_equal(_run_compiled(model, {"x": x})[0], [-64, -3, -3, -127])


def test_sign_prelu_and_shrink_on_integers():
    int32 = TensorProto.INT32
    nodes = [
        helper.make_node("Sign", ["x"], ["y0"]),
        helper.make_node("PRelu", ["x", "slope"], ["y1"]),
        helper.make_node("Shrink", ["x"], ["y2"], lambd=2.0, bias=1.0),
    ]
    model = make_model(
        nodes,
        [tensor("x", (2, 3), int32), tensor("slope", (3,), int32)],
        [tensor(f"y{k}", (2, 3), int32) for k in range(3)],
        opset=16,
    )
    inputs = {
        "x": np.array([[-5, -2, 0], [1, 2, 7]], "int32"),
        "slope": np.array([2, -3, 4], "int32"),
    }
    check_against_onnxruntime(model, inputs=inputs, compiled=True)


def test_zero_size_inputs():
    nodes = [
        helper.make_node("Sin", ["x"], ["y0"]),
        helper.make_node("BitShift", ["a", "n"], ["y1"], direction="LEFT"),
    ]
    uint8 = TensorProto.UINT8
    model = make_model(
        nodes,
        [tensor("x", (0, 3)), tensor("a", (2, 0), uint8), tensor("n", (1,), uint8)],
        [tensor("y0", (0, 3)), tensor("y1", (2, 0), uint8)],
        opset=11,
    )
    check_against_onnxruntime(model, compiled=True)


def test_constant_inputs_fold_at_import():
    """Known inputs fold by the graph operators' references, as onnxruntime computes them."""
    known = {
        "c": np.array([-2.0, -0.5, 2.5, 4.0], "float32"),
        "k": np.array([-3, 5, 7, 100], "int8"),
        "n": np.array([1, 9, -1, 2], "int8"),
    }
    nodes = [
        helper.make_node("Elu", ["c"], ["e"]),
        helper.make_node("Round", ["e"], ["r"]),
        helper.make_node("Add", ["r", "x"], ["y0"]),
        helper.make_node("BitShift", ["k", "n"], ["s"], direction="RIGHT"),
        helper.make_node("BitwiseXor", ["s", "i"], ["y1"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", (4,)), tensor("i", (4,), TensorProto.INT8)],
        [tensor("y0", (4,)), tensor("y1", (4,), TensorProto.INT8)],
        known,
        opset=28,
    )
    assert calls(check_against_onnxruntime(model, compiled=True)) == ["add", "bitwise_xor"]
