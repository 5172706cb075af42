"""Values known at import: Constant, Shape, Size, ConstantOfShape, Range, EyeLike. Each yields an
array, so the shape computations of exported models fold to constants before any graph is
built."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tessel.arith.dims import (
    dim_expr,
    dim_product,
    dim_text,
    dim_upper_bound,
    is_static,
    normalize_dim,
    simplify_dim,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.graph.expr import Expr
from tessel.ir import builders


def convert_constant(node: OnnxNode) -> np.ndarray:
    """Constant: its value attribute (a tensor, or value_float(s) / value_int(s))."""
    if "value" in node.attrs:
        return np.asarray(node.attrs["value"])
    scalars = {
        "value_float": np.float32,
        "value_floats": np.float32,
        "value_int": np.int64,
        "value_ints": np.int64,
    }
    for name, dtype in scalars.items():
        if name in node.attrs:
            return np.asarray(node.attrs[name], dtype=dtype)
    raise node.error(
        f"its value is given as {sorted(node.attrs)}, which Tessel does not import",
        hint="use a dense `value` tensor",
    )


def convert_shape(node: OnnxNode) -> np.ndarray:
    """Shape (opset 15+: start, end): the static shape of the input."""
    shape = node.shape(0)
    start, end = node.attr("start", 0), node.attr("end", len(shape))
    if not is_static(shape):  # symbolic dimensions: an object array of them (symbolic.py)
        dims = np.empty(len(shape[start:end]), dtype=object)
        dims[:] = shape[start:end]
        return dims
    return np.asarray(shape[start:end], dtype=np.int64)


def convert_size(node: OnnxNode) -> np.ndarray:
    """Size: the number of elements of the input."""
    shape = node.shape(0)
    if not is_static(shape):
        size = np.empty((), dtype=object)
        size[()] = dim_product(shape)
        return size
    return np.asarray(math.prod(shape), dtype=np.int64)


def convert_constant_of_shape(node: OnnxNode) -> np.ndarray:
    """ConstantOfShape: a tensor of the shape input, filled with `value` (0.0 by default)."""
    dims = node.static(0, "shape")
    value = node.attr("value", np.zeros(1, np.float32))
    if dims.dtype == object:  # a symbolic shape: the value broadcast to it when the graph runs
        fill = const(value.reshape(()).astype(value.dtype))
        return call("broadcast_to", fill, shape=tuple(normalize_dim(d) for d in dims.tolist()))
    shape = tuple(int(d) for d in dims)
    return np.full(shape, value.reshape(()), dtype=value.dtype)


def _range_scalar(node: OnnxNode, index: int, what: str) -> np.ndarray:
    """Range's input `index` as a scalar: the spec wants one, and a [1]-shaped tensor passes as
    the scalar it holds (onnxruntime's leniency; inference.py lets it through)."""
    value = node.static(index, what)
    if value.shape not in ((), (1,)):
        raise node.error(f"{what} must be a scalar, got shape {list(value.shape)}")
    return value.reshape(())


def convert_range(node: OnnxNode) -> np.ndarray:
    """Range: start + i * delta for i < max(ceil((limit - start) / delta), 0)."""
    start, limit, delta = (
        _range_scalar(node, i, name) for i, name in enumerate(("start", "limit", "delta"))
    )
    if any(value.dtype == object for value in (start, limit, delta)):
        return _symbolic_range(node, start.item(), limit.item(), delta.item())
    count = max(math.ceil((limit.item() - start.item()) / delta.item()), 0)
    return (start + delta * np.arange(count)).astype(start.dtype)


def _symbolic_range(node: OnnxNode, start: Any, limit: Any, delta: Any) -> Expr:
    """Range to a symbolic limit (positions 0..seq): the range up to the limit's upper bound,
    a constant, sliced to the symbolic count, so the graph holds no run-time arithmetic."""
    if not (isinstance(start, int) and isinstance(delta, int) and delta > 0):
        raise node.error("a Range to a symbolic limit takes a constant start and positive delta")
    count = simplify_dim(
        builders.max_value(dim_expr(limit - start + delta - 1) // delta, dim_expr(0))
    )
    largest = dim_upper_bound(count)
    if largest is None or largest > _LARGEST_RANGE:
        raise node.error(
            f"the Range to {dim_text(limit)} has no upper bound on its length (or one over 2**24)",
            hint="give the dimension bounds (dims={'seq': (1, 512)}, --dim seq=1..512)",
        )
    dtype = node.out_type().dtype if node.output_types[0] is not None else "int64"
    table = (start + delta * np.arange(largest)).astype(dtype)
    return call("strided_slice", const(table), begin=(0,), end=(count,), axes=(0,))


_LARGEST_RANGE = 1 << 24  # elements of the table a symbolic Range slices


def convert_eye_like(node: OnnxNode) -> np.ndarray:
    """EyeLike: ones on diagonal k of a 2-D tensor of the input's shape, zeros elsewhere; only
    the input's shape matters, so it is known at import."""
    shape = node.shape(0)
    if len(shape) != 2:
        raise node.error(f"the input must be 2-D, got shape {list(shape)}")
    dtype = node.out_type().dtype
    return np.eye(shape[0], shape[1], k=int(node.attr("k", 0)), dtype=dtype)


TABLE: dict[str, tuple[Entry, ...]] = {
    # values known at import
    "Constant": every_opset(convert_constant),
    "Shape": every_opset(convert_shape),  # start/end attributes from 15
    "Size": every_opset(convert_size),
    "ConstantOfShape": every_opset(convert_constant_of_shape),
    "Range": every_opset(convert_range),
    "EyeLike": every_opset(convert_eye_like),
}
