"""Elementwise operators: unary math, broadcasting binary arithmetic and comparisons, Clip, the
hard activations, IsNaN and IsInf, Where, Cast, Identity and Dropout."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.converters.random import training_dropout
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.frontend.onnx.symbolic import fold_elementwise
from tessel.graph.expr import Expr

Result = Expr | np.ndarray

# ONNX op type -> the graph operator; a known input folds by the operator's entry of the
# semantics table (tessel.graph.op.elementwise_semantics), as the graph would compute it.
UNARY: dict[str, str] = {
    "Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Erf": "erf", "Sqrt": "sqrt",
    "Exp": "exp", "Log": "log", "Neg": "negative", "Abs": "abs", "Floor": "floor",
    "Ceil": "ceil", "Not": "logical_not", "IsNaN": "isnan",
}  # fmt: skip

# Div truncates integer quotients toward zero (ONNX's reference and onnxruntime: C's `/`).
BINARY: dict[str, str] = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Equal": "equal",
    "Less": "less", "LessOrEqual": "less_equal", "Greater": "greater",
    "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or",
    "Xor": "logical_xor",
}  # fmt: skip

# Variadic ONNX ops that fold pairwise: op type -> the graph's binary operator.
VARIADIC: dict[str, str] = {"Max": "maximum", "Min": "minimum", "Sum": "add"}


def convert_unary(node: OnnxNode) -> Result:
    """Unary math: one graph operator per ONNX op type (see `UNARY`)."""
    name = UNARY[node.op_type]
    if node.all_constant():
        return fold_elementwise(name, node.input(0).data)
    return call(name, node.expr(0))


def convert_binary(node: OnnxNode) -> Result:
    """Broadcasting binary operators (see `BINARY`)."""
    name = BINARY[node.op_type]
    if name == "equal" and node.input(0).type.dtype == "string":
        if node.all_constant():
            return fold("string.equal", *node.arrays())
        return call("string.equal", node.expr(0), node.expr(1))
    if node.all_constant():
        return fold_elementwise(name, *node.arrays())
    return call(name, node.expr(0), node.expr(1))


def convert_pow(node: OnnxNode) -> Result:
    """Pow: a float base raises to the exponent cast to its dtype; an integer base is computed as
    onnxruntime does (C's pow in double, converted back to the base's dtype: exact wherever the
    result fits 53 bits, and 2 ** -1 truncates to 0)."""
    base_dtype = node.input(0).type.dtype
    if base_dtype == "bool" or node.input(1).type.dtype == "bool":
        raise node.error("Pow takes numbers, not bools")
    wide = base_dtype if np.dtype(base_dtype).kind == "f" else "float64"
    if node.all_constant():
        a, b = node.arrays()
        with np.errstate(all="ignore"):
            return np.power(a.astype(wide), b.astype(wide)).astype(base_dtype)
    result = call("power", _cast_to(node, 0, wide), _cast_to(node, 1, wide))
    return result if wide == base_dtype else call("cast", result, dtype=base_dtype)


def _cast_to(node: OnnxNode, index: int, dtype: str) -> Expr:
    """Input `index` as `dtype` (itself when it has that dtype)."""
    value = node.input(index)
    if value.type.dtype == dtype:
        return value.expr
    if value.is_constant:
        return const(value.data, dtype)
    return call("cast", value.expr, dtype=dtype)


def convert_variadic(node: OnnxNode) -> Result:
    """Max, Min, Sum of any number of inputs: a chain of binary operators."""
    name = VARIADIC[node.op_type]
    if node.all_constant():
        arrays = node.arrays()
        result = arrays[0]
        for array in arrays[1:]:
            result = fold_elementwise(name, result, array)
        return np.asarray(result)
    result = node.expr(0)
    for index in range(1, len(node.inputs)):
        result = call(name, result, node.expr(index))
    return result


def _mod(node: OnnxNode) -> Result:
    """`fmod=1`: C's remainder (the dividend's sign, mod); else Python's (the divisor's sign,
    floor_mod, with opset 28's special cases for floats: see topi's floor_mod)."""
    fmod = node.attr("fmod", 0)
    if fmod not in (0, 1):
        raise node.error(f"fmod must be 0 or 1, got {fmod}")
    name = "mod" if fmod else "floor_mod"
    if node.all_constant():  # x % 0 is NaN for floats, the spec's result
        return fold_elementwise(name, *node.arrays())
    return call(name, node.expr(0), node.expr(1))


def convert_mod(node: OnnxNode) -> Result:
    """Mod before opset 28: fmod=0 is defined for integers only."""
    if not node.attr("fmod", 0) and np.dtype(node.out_type().dtype).kind == "f":
        raise node.error(
            f"fmod=0 (the divisor's sign) is defined for integers only before "
            f"opset 28 (the model's is {node.opset}); the operands are floating "
            "point",
            hint="set fmod=1 for floats",
        )
    return _mod(node)


def convert_mod_28(node: OnnxNode) -> Result:
    """Mod from opset 28: fmod=0 on floats too (floor modulo with the spec's special cases)."""
    return _mod(node)


def _limits(dtype: str) -> tuple[float, float]:
    info = np.finfo(dtype) if np.issubdtype(np.dtype(dtype), np.floating) else np.iinfo(dtype)
    return info.min, info.max


def convert_clip(node: OnnxNode) -> Result:
    """Clip (opset 11+: bounds are optional inputs). Known bounds give `clip(a_min=, a_max=)`;
    bounds computed in the graph give maximum/minimum."""
    dtype = node.input(0).type.dtype
    low, high = _limits(dtype)
    bounds = [node.input(i) if node.has_input(i) else None for i in (1, 2)]
    if node.all_constant():
        a_min = low if bounds[0] is None else bounds[0].data
        a_max = high if bounds[1] is None else bounds[1].data
        return np.minimum(np.maximum(node.input(0).data, a_min), a_max).astype(dtype)
    if all(b is None or b.is_constant for b in bounds):
        a_min = low if bounds[0] is None else bounds[0].data.item()
        a_max = high if bounds[1] is None else bounds[1].data.item()
        return call("clip", node.expr(0), a_min=float(a_min), a_max=float(a_max))
    result = node.expr(0)
    if bounds[0] is not None:
        result = call("maximum", result, bounds[0].expr)
    if bounds[1] is not None:
        result = call("minimum", result, bounds[1].expr)
    return result


def _hard_sigmoid(x: Expr, dtype: str, alpha: float, beta: float) -> Expr:
    scaled = call("add", call("multiply", x, const(alpha, dtype)), const(beta, dtype))
    return call("clip", scaled, a_min=0.0, a_max=1.0)


def convert_hard_sigmoid(node: OnnxNode) -> Expr:
    """HardSigmoid: clip(alpha * x + beta, 0, 1)."""
    alpha, beta = node.attr("alpha", 0.2), node.attr("beta", 0.5)
    return _hard_sigmoid(node.expr(0), node.input(0).type.dtype, alpha, beta)


def convert_hard_swish(node: OnnxNode) -> Expr:
    """HardSwish (opset 14+): x * HardSigmoid(x) with alpha = 1/6, beta = 0.5."""
    x = node.expr(0)
    return call("multiply", x, _hard_sigmoid(x, node.input(0).type.dtype, 1 / 6, 0.5))


def convert_leaky_relu(node: OnnxNode) -> Expr:
    """LeakyRelu: nn.leaky_relu(alpha=)."""
    return call("nn.leaky_relu", node.expr(0), alpha=float(node.attr("alpha", 0.01)))


def convert_gelu(node: OnnxNode) -> Expr:
    """Gelu (opset 20+): 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation."""
    x, dtype = node.expr(0), node.input(0).type.dtype
    if node.attr("approximate", "none") == "tanh":
        cube = call("multiply", call("multiply", x, x), x)
        inner = call("add", x, call("multiply", cube, const(0.044715, dtype)))
        gate = call("tanh", call("multiply", inner, const(math.sqrt(2 / math.pi), dtype)))
    else:
        gate = call("erf", call("multiply", x, const(1 / math.sqrt(2), dtype)))
    half = call("multiply", x, const(0.5, dtype))
    return call("multiply", half, call("add", gate, const(1.0, dtype)))


def convert_is_inf(node: OnnxNode) -> Result:
    """IsInf: isinf, or a comparison with the one infinity detected (detect_positive,
    detect_negative); all false when neither is."""
    positive = bool(node.attr("detect_positive", 1))
    negative = bool(node.attr("detect_negative", 1))
    if node.all_constant():
        x = node.input(0).data
        return (positive & np.isposinf(x)) | (negative & np.isneginf(x))
    if not (positive or negative):
        return np.zeros(node.shape(0), bool)
    if positive and negative:
        return call("isinf", node.expr(0))
    infinity = const(np.inf if positive else -np.inf, node.input(0).type.dtype)
    return call("equal", node.expr(0), infinity)


def convert_reciprocal(node: OnnxNode) -> Result:
    """Reciprocal: 1 / x."""
    dtype = node.input(0).type.dtype
    if node.all_constant():  # the divide the call below makes
        return fold_elementwise("divide", np.ones((), dtype), node.input(0).data)
    return call("divide", const(1, dtype), node.expr(0))


def convert_where(node: OnnxNode) -> Result:
    """Where(condition, x, y): where."""
    if node.all_constant():
        condition, x, y = node.arrays()
        return np.where(condition.astype(bool), x, y)
    return call("where", node.expr(0), node.expr(1), node.expr(2))


def convert_cast(node: OnnxNode) -> Result:
    """Cast: cast(dtype=); folds when the input is known (shape arithmetic casts often)."""
    dtype = node.out_type().dtype
    data = node.input(0).data if node.all_constant() else None
    if data is not None and data.dtype == object and np.dtype(dtype).kind in "iu":
        return data  # symbolic sizes stay sizes (an exporter's Cast of Shape to int64)
    if data is not None:
        return data.astype(dtype)
    if node.input(0).type.dtype == dtype:
        return node.expr(0)
    return call("cast", node.expr(0), dtype=dtype)


def convert_identity(node: OnnxNode) -> Result:
    """Identity: the input itself."""
    return node.input(0).data if node.all_constant() else node.input(0)  # a sequence too


def convert_dropout(node: OnnxNode) -> list[Result | None]:
    """Dropout at inference, or in training with ratio 0 (nothing dropped): the input itself,
    and an all-true mask when the mask is used; in training, random elements dropped
    (converters/random.py)."""
    if node.has_input(2) and node.static(2, "training_mode").item():
        ratio = float(node.static_or(1, "ratio", np.array(0.5)).item())
        if ratio != 0:
            return training_dropout(node, ratio)
    data = node.input(0).data if node.all_constant() else node.expr(0)
    if not node.output_used(1):
        return [data, None]
    return [data, np.ones(node.out_type(1).shape, dtype=bool)]


TABLE: dict[str, tuple[Entry, ...]] = {
    # elementwise
    **{op: every_opset(convert_unary) for op in UNARY if op != "Not"},
    "Not": every_opset(convert_unary, first=1),  # one version since opset 1
    **{op: every_opset(convert_binary) for op in BINARY},
    **{op: every_opset(convert_variadic) for op in VARIADIC},
    "Pow": every_opset(convert_pow),
    "Mod": ((FIRST_OPSET, 27, convert_mod), (28, LAST_OPSET, convert_mod_28)),
    "Reciprocal": every_opset(convert_reciprocal),
    "Clip": every_opset(convert_clip, first=11),  # min/max are inputs from 11
    "LeakyRelu": every_opset(convert_leaky_relu),
    "HardSigmoid": every_opset(convert_hard_sigmoid),
    "HardSwish": every_opset(convert_hard_swish, first=14),
    "Gelu": every_opset(convert_gelu, first=20),
    "IsInf": every_opset(convert_is_inf),  # opset 20 adds only dtypes
    "Where": every_opset(convert_where),
    "Cast": every_opset(convert_cast),
    "Identity": every_opset(convert_identity),
    "Dropout": every_opset(convert_dropout),  # ratio/training_mode inputs from 12
}
