"""ONNX's random operators (RandomUniform, RandomNormal, their *Like forms, Bernoulli,
Multinomial) and training-mode Dropout, as the graph's random operators (tessel/graph/op/random.py)
of the model's random state: main's parameter `tessel_random_state`, which the importer adds
the first time a node draws and the executor fills each call. Each node gets a stream of its
own (a Loop body unrolled draws afresh in every iteration).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import dtype_of_elem_type
from tessel.graph.expr import Expr


def _seed(node: OnnxNode) -> float | None:
    seed = node.attr("seed")
    return None if seed is None else float(seed)


def _dtype(node: OnnxNode, default: str) -> str:
    elem = node.attr("dtype")
    if elem is None:
        return default
    return dtype_of_elem_type(int(elem), f"{node.op_type} node `{node.name}`'s dtype")


def _draw(node: OnnxNode, op: str, *args: Expr, **attrs: Any) -> Expr:
    scope = node.scope
    return call(
        op, scope.random_state(), *args, seed=_seed(node), stream=scope.random_stream(), **attrs
    )


def convert_random(node: OnnxNode) -> Expr:
    """RandomUniform / RandomNormal (shape and dtype from attributes) and their *Like forms
    (from the input, dtype overridable)."""
    like = node.op_type.endswith("Like")
    if like:
        shape, dtype = node.shape(0), _dtype(node, node.input(0).type.dtype)
    else:
        given = node.attr("shape")
        if given is None:
            raise node.error("needs the attribute `shape`")
        shape, dtype = tuple(int(d) for d in given), _dtype(node, "float32")
    if dtype not in ("float16", "float32", "float64"):
        raise node.error(f"draws float16, float32 or float64 values, not {dtype}")
    if node.op_type.startswith("RandomUniform"):
        params = {"low": float(node.attr("low", 0.0)), "high": float(node.attr("high", 1.0))}
        return _draw(node, "random.uniform", shape=shape, dtype=dtype, **params)
    params = {"mean": float(node.attr("mean", 0.0)), "scale": float(node.attr("scale", 1.0))}
    return _draw(node, "random.normal", shape=shape, dtype=dtype, **params)


def convert_bernoulli(node: OnnxNode) -> Expr:
    """Bernoulli: 1 with each input element's probability (in the input's dtype by default)."""
    return _draw(node, "random.bernoulli", node.expr(0), dtype=_dtype(node, ""))


def convert_multinomial(node: OnnxNode) -> Expr:
    """Multinomial: `sample_size` class indices per row of unnormalized log-probabilities."""
    size = int(node.attr("sample_size", 1))
    return _draw(
        node, "random.multinomial", node.expr(0), sample_size=size, dtype=_dtype(node, "int32")
    )


def training_dropout(node: OnnxNode, ratio: float) -> list[Any]:
    """Dropout in training mode: each element kept with probability 1 - ratio and scaled by
    1 / (1 - ratio), else 0; the mask says which were kept."""
    if not 0 <= ratio < 1:
        raise node.error(f"ratio {ratio} must lie in [0, 1)")
    ty = node.input(0).type
    if not ty.dtype.startswith("float"):
        raise node.error(f"drops float elements, not {ty.dtype}")
    u = _draw(node, "random.uniform", shape=ty.shape, dtype="float32")
    keep = call("greater_equal", u, const(np.float32(ratio)))
    scale = const(np.asarray(1.0 / (1.0 - ratio), dtype=ty.dtype))
    zero = const(np.zeros((), dtype=ty.dtype))
    data = node.expr(0)
    out = call("where", keep, call("multiply", data, scale), zero)
    return [out, keep if node.output_used(1) else None]


TABLE: dict[str, tuple[Entry, ...]] = {
    "RandomUniform": every_opset(convert_random, first=1),
    "RandomNormal": every_opset(convert_random, first=1),
    "RandomUniformLike": every_opset(convert_random, first=1),
    "RandomNormalLike": every_opset(convert_random, first=1),
    "Bernoulli": every_opset(convert_bernoulli, first=15),
    "Multinomial": every_opset(convert_multinomial),
}
