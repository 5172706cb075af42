"""Elementwise math beyond elementwise.py: trigonometric and hyperbolic functions, Round and Sign,
the activations (Softplus, Softsign, Elu, Selu, Celu, ThresholdedRelu, Mish, Shrink, Swish,
SwiGLU, PRelu), Mean, the bitwise operators and BitShift, CastLike and BitCast.

Each converter is written once with `apply`, which folds at import when its operands are arrays
and builds a call otherwise, so folding has exactly the semantics of the graph. Activations are
composed from graph operators following the formula of ONNX's specification.
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.elementwise import convert_cast
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.graph.expr import Expr

Result = Expr | np.ndarray


def apply(name: str, *values: Result, **attrs: object) -> Result:
    """`name(values..., attrs...)`: folded by the operator's reference when every value is an
    array, a call (arrays as constants) otherwise."""
    if all(isinstance(v, np.ndarray) for v in values):
        with np.errstate(all="ignore"):  # NaN and infinities are results here
            return fold(name, *values, **attrs)
    return call(name, *(const(v) if isinstance(v, np.ndarray) else v for v in values), **attrs)


def data_of(node: OnnxNode, index: int = 0) -> Result:
    """Input `index` as an array when known at import, else as an expression."""
    value = node.input(index)
    return value.data if value.is_constant else value.expr


def scalar(value: float, dtype: str) -> np.ndarray:
    """A rank-0 array of `dtype` (a graph constant or a folding operand)."""
    return np.asarray(value, dtype=dtype)


def _float_input(node: OnnxNode, index: int = 0) -> str:
    """The dtype of input `index`, which the operator defines on floats only."""
    dtype = node.input(index).type.dtype
    if not dtype.startswith(("float", "bfloat")):
        raise node.error(f"input {index} has dtype {dtype}; {node.op_type} takes floats")
    return dtype


# ONNX op type -> the graph operator of the same function.
UNARY = {
    "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
    "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
    "Round": "round", "Sign": "sign", "Softplus": "nn.softplus", "BitwiseNot": "bitwise_not",
}  # fmt: skip

BINARY = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def convert_unary(node: OnnxNode) -> Result:
    """One graph operator of one input (see `UNARY`)."""
    return apply(UNARY[node.op_type], data_of(node))


def convert_binary(node: OnnxNode) -> Result:
    """One broadcasting graph operator of two inputs (see `BINARY`)."""
    return apply(BINARY[node.op_type], data_of(node, 0), data_of(node, 1))


def convert_bit_shift(node: OnnxNode) -> Result:
    """BitShift: left_shift or right_shift by `direction`; amounts outside [0, width) give 0
    (the sign fill for a right shift of a negative value), as opset 28 defines them."""
    direction = node.attr("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise node.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    name = "left_shift" if direction == "LEFT" else "right_shift"
    return apply(name, data_of(node, 0), data_of(node, 1))


def _where(condition: Result, x: Result, y: Result) -> Result:
    return apply("where", condition, x, y)


def convert_softsign(node: OnnxNode) -> Result:
    """Softsign: x / (1 + |x|)."""
    dtype, x = _float_input(node), data_of(node)
    return apply("divide", x, apply("add", scalar(1, dtype), apply("abs", x)))


def _exp_minus_one(x: Result, alpha: float, dtype: str) -> Result:
    """alpha * (exp(x) - 1), the negative branch of the exponential units."""
    return apply(
        "multiply", scalar(alpha, dtype), apply("subtract", apply("exp", x), scalar(1, dtype))
    )


def convert_elu(node: OnnxNode) -> Result:
    """Elu: x for x >= 0, alpha * (exp(x) - 1) below."""
    dtype, x = _float_input(node), data_of(node)
    negative = _exp_minus_one(x, node.attr("alpha", 1.0), dtype)
    return _where(apply("less", x, scalar(0, dtype)), negative, x)


def convert_selu(node: OnnxNode) -> Result:
    """Selu: gamma * x for x > 0, gamma * (alpha * exp(x) - alpha) otherwise."""
    dtype, x = _float_input(node), data_of(node)
    alpha = node.attr("alpha", 1.67326319217681884765625)
    gamma = node.attr("gamma", 1.05070102214813232421875)
    negative = apply(
        "subtract", apply("multiply", scalar(alpha, dtype), apply("exp", x)), scalar(alpha, dtype)
    )
    inner = _where(apply("greater", x, scalar(0, dtype)), x, negative)
    return apply("multiply", scalar(gamma, dtype), inner)


def convert_celu(node: OnnxNode) -> Result:
    """Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    dtype, x = _float_input(node), data_of(node)
    alpha = node.attr("alpha", 1.0)
    if alpha == 0:
        raise node.error("alpha=0 divides by zero")
    scaled = apply("divide", x, scalar(alpha, dtype))
    negative = apply("minimum", scalar(0, dtype), _exp_minus_one(scaled, alpha, dtype))
    return apply("add", apply("maximum", scalar(0, dtype), x), negative)


def convert_thresholded_relu(node: OnnxNode) -> Result:
    """ThresholdedRelu: x where x > alpha, else 0."""
    dtype, x = _float_input(node), data_of(node)
    above = apply("greater", x, scalar(node.attr("alpha", 1.0), dtype))
    return _where(above, x, scalar(0, dtype))


def convert_mish(node: OnnxNode) -> Result:
    """Mish: x * tanh(softplus(x))."""
    _float_input(node)
    x = data_of(node)
    return apply("multiply", x, apply("tanh", apply("nn.softplus", x)))


def _swish(x: Result, alpha: float, dtype: str) -> Result:
    """x * sigmoid(alpha * x)."""
    return apply("multiply", x, apply("sigmoid", apply("multiply", scalar(alpha, dtype), x)))


def convert_swish(node: OnnxNode) -> Result:
    """Swish (opset 24): x * sigmoid(alpha * x)."""
    return _swish(data_of(node), node.attr("alpha", 1.0), _float_input(node))


def convert_swiglu(node: OnnxNode) -> Result:
    """SwiGLU (opset 28): Swish(A) * B with Swish's alpha, as its function body (Swish, Mul)."""
    dtype = _float_input(node)
    if node.shape(0) != node.shape(1):
        # The spec applies no broadcasting (its function body's Mul would): refused, not guessed.
        raise node.error(
            f"A {list(node.shape(0))} and B {list(node.shape(1))} differ in shape "
            "(SwiGLU does not broadcast)"
        )
    return apply(
        "multiply", _swish(data_of(node), node.attr("alpha", 1.0), dtype), data_of(node, 1)
    )


def _check_integer_shrink(node: OnnxNode, dtype: str, lambd: float, bias: float) -> None:
    """On integers, Shrink's lambd and bias must be whole numbers that the dtype holds (then the
    arithmetic is exact in it; the spec does not say how x - 0.5 would round)."""
    if not (lambd.is_integer() and bias.is_integer()):
        raise node.error(f"lambd={lambd} and bias={bias} must be whole numbers for {dtype} input")
    info = np.iinfo(dtype)
    bounds = (lambd, bias) if dtype.startswith("uint") else (lambd, -lambd, bias)
    if not all(info.min <= b <= info.max for b in bounds):
        raise node.error(f"lambd={lambd} or bias={bias} does not fit the input's {dtype}")


def convert_shrink(node: OnnxNode) -> Result:
    """Shrink: x + bias below -lambd, x - bias above lambd, 0 between."""
    dtype, x = node.input(0).type.dtype, data_of(node)
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    if dtype == "bool":
        raise node.error("the input is a bool tensor; Shrink takes numbers")
    if not dtype.startswith(("float", "bfloat")):
        _check_integer_shrink(node, dtype, lambd, bias)
    low = _below(x, -lambd, dtype)
    high = apply("greater", x, scalar(lambd, dtype))
    zero = scalar(0, dtype)
    inner = _where(high, apply("subtract", x, scalar(bias, dtype)), zero)
    return _where(low, apply("add", x, scalar(bias, dtype)), inner)


def _below(x: Result, bound: float, dtype: str) -> Result:
    """x < bound (never true for an unsigned x below a bound <= 0)."""
    if dtype.startswith("uint") and bound <= 0:
        return apply("less", x, scalar(0, dtype))  # all false, and no negative constant
    return apply("less", x, scalar(bound, dtype))


def convert_prelu(node: OnnxNode) -> Result:
    """PRelu: slope * x where x < 0, else x; the slope broadcasts to x's shape (one-way)."""
    dtype, x, slope = node.input(0).type.dtype, data_of(node, 0), data_of(node, 1)
    if dtype == "bool":
        raise node.error("the input is a bool tensor; PRelu takes numbers")
    x_shape, slope_shape = node.shape(0), node.shape(1)
    if len(slope_shape) > len(x_shape) or any(
        s not in (1, d) for s, d in zip(reversed(slope_shape), reversed(x_shape), strict=False)
    ):
        raise node.error(
            f"slope of shape {list(slope_shape)} does not broadcast to the input's "
            f"shape {list(x_shape)}"
        )
    if dtype.startswith("uint"):
        return x  # never negative
    negative = apply("less", x, scalar(0, dtype))
    return _where(negative, apply("multiply", x, slope), x)


def convert_mean(node: OnnxNode) -> Result:
    """Mean of any number of inputs: their broadcast sum divided by the count."""
    dtype = _float_input(node)
    values = [data_of(node, i) for i in range(len(node.inputs))]
    total = values[0]
    for value in values[1:]:
        total = apply("add", total, value)
    if len(values) == 1:
        return total
    return apply("divide", total, scalar(len(values), dtype))


def convert_bit_cast(node: OnnxNode) -> Result:
    """BitCast (opset 26): the same bits read as another type of the same width."""
    source, target = node.input(0).type.dtype, node.out_type().dtype
    if (
        source == "bool"
        or target == "bool"
        or np.dtype(source).itemsize != np.dtype(target).itemsize
    ):
        raise node.error(
            f"{source} and {target} differ in width",
            hint="bools have no defined bit pattern in Tessel",
        )
    return apply("reinterpret", data_of(node), dtype=target)


TABLE: dict[str, tuple[Entry, ...]] = {
    **{op: every_opset(convert_unary) for op in UNARY},
    **{op: every_opset(convert_binary) for op in BINARY},
    "BitShift": every_opset(convert_bit_shift),  # 28 defines every amount; unsigned only before
    "Softsign": every_opset(convert_softsign),
    "Elu": every_opset(convert_elu),
    "Selu": every_opset(convert_selu),
    "Celu": every_opset(convert_celu),
    "ThresholdedRelu": every_opset(convert_thresholded_relu),
    "Mish": every_opset(convert_mish),
    "Swish": every_opset(convert_swish),
    "SwiGLU": every_opset(convert_swiglu),
    "Shrink": every_opset(convert_shrink),
    "PRelu": every_opset(convert_prelu),  # unidirectional broadcasting from 7
    "Mean": every_opset(convert_mean),
    "CastLike": every_opset(convert_cast),  # the output type is the target's
    "BitCast": every_opset(convert_bit_cast),
}
