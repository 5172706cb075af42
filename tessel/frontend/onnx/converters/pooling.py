"""Pooling: MaxPool, AveragePool, LpPool (1-D, 2-D, 3-D windows), GlobalAveragePool,
GlobalMaxPool, GlobalLpPool, MaxUnpool."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.converters import pool_indices
from tessel.frontend.onnx.converters.windows import ceil_mode_window, pool, spatial_rank, window_of
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType


def _kernel(node: OnnxNode, rank: int) -> tuple[int, ...]:
    """kernel_shape, which must give one extent per spatial axis."""
    kernel = tuple(node.attr("kernel_shape", ()))
    if len(kernel) != rank:
        raise node.error(f"kernel_shape {list(kernel)} does not fit an input of rank {rank + 2}")
    return kernel


def _out_type(node: OnnxNode, counts: tuple[int, ...]) -> TensorType:
    """The output type with ceil_mode's window counts (onnxruntime's, not ONNX inference's)."""
    out = node.out_type()
    return TensorType((*out.shape[:2], *counts), out.dtype)


def convert_max_pool(node: OnnxNode) -> Value | list:
    """MaxPool: nn.max_pool2d (1-D and 3-D through it). ceil_mode becomes extra end padding
    (padding never wins a max), so the window count is exactly onnxruntime's, which drops a
    last window starting in the padding. The Indices output: pool_indices."""
    rank = spatial_rank(node)
    window = window_of(node, _kernel(node, rank))
    out_type = node.out_type()
    if node.attr("ceil_mode", 0):
        window, counts = ceil_mode_window(node.shape(0), window)
        out_type = _out_type(node, counts)
    pooled = pool("max", node.expr(0), node.shape(0), out_type.shape, window, ceil_mode=False)
    if not node.output_used(1):
        return Value(pooled, out_type)
    indices = pool_indices.argmax_indices(node, window, out_type.shape)
    return [Value(pooled, out_type), Value(indices, TensorType(out_type.shape, "int64"))]


def convert_average_pool(node: OnnxNode) -> Value:
    """AveragePool: nn.avg_pool2d (1-D and 3-D through it). With count_include_pad=0, ceil_mode
    becomes extra end padding (excluded from the divisor, so the result is the same)."""
    rank = spatial_rank(node)
    window = window_of(node, _kernel(node, rank))
    include_pad = bool(node.attr("count_include_pad", 0))
    ceil_mode, out_type = bool(node.attr("ceil_mode", 0)), node.out_type()
    if ceil_mode:
        end_padded, counts = ceil_mode_window(node.shape(0), window)
        out_type = _out_type(node, counts)
        if not include_pad:
            window, ceil_mode = end_padded, False
    pooled = pool(
        "avg",
        node.expr(0),
        node.shape(0),
        out_type.shape,
        window,
        ceil_mode=ceil_mode,
        count_include_pad=include_pad,
    )
    return Value(pooled, out_type)


def _power(x: Expr, p: float, dtype: str) -> Expr:
    """x ** p (products for the common p = 1, 2)."""
    if p == 1:
        return x
    if p == 2:
        return call("multiply", x, x)
    return call("power", x, const(p, dtype))


def _root(x: Expr, p: float, dtype: str) -> Expr:
    """x ** (1 / p) (sqrt for p = 2)."""
    if p == 1:
        return x
    if p == 2:
        return call("sqrt", x)
    return call("power", x, const(1.0 / p, dtype))


def _lp_order(node: OnnxNode) -> float:
    """The attribute p (a float before opset 11, an int from it), positive."""
    p = float(node.attr("p", 2))
    if p <= 0:
        raise node.error(f"p = {p} must be positive")
    return p


def convert_lp_pool(node: OnnxNode) -> Value:
    """LpPool: (sum over the window of |x|^p)^(1/p). The sum is an average pool counting the
    padding (ceil_mode as extra end padding, so every window counts all its taps) times the
    kernel's size."""
    rank = spatial_rank(node)
    window = window_of(node, _kernel(node, rank))
    p, out_type = _lp_order(node), node.out_type()
    dtype = out_type.dtype
    if node.attr("ceil_mode", 0):
        window, counts = ceil_mode_window(node.shape(0), window)
        out_type = _out_type(node, counts)
    powered = _power(call("abs", node.expr(0)), p, dtype)
    mean = pool(
        "avg",
        powered,
        node.shape(0),
        out_type.shape,
        window,
        ceil_mode=False,
        count_include_pad=True,
    )
    total = call("multiply", mean, const(math.prod(window.kernel), dtype))
    return Value(_root(total, p, dtype), out_type)


def _global_pool(node: OnnxNode, relay_2d: str, reduce: str) -> Expr:
    """The 2-D global pool, or the reduction over the spatial axes of other ranks."""
    rank = len(node.shape(0)) - 2
    if rank == 2:
        return call(relay_2d, node.expr(0))
    return call(reduce, node.expr(0), axis=tuple(range(2, rank + 2)), keepdims=True)


def convert_global_average_pool(node: OnnxNode) -> Expr:
    """GlobalAveragePool: nn.global_avg_pool2d (other ranks: mean over the spatial axes)."""
    return _global_pool(node, "nn.global_avg_pool2d", "mean")


def convert_global_max_pool(node: OnnxNode) -> Expr:
    """GlobalMaxPool: nn.global_max_pool2d (other ranks: max over the spatial axes)."""
    return _global_pool(node, "nn.global_max_pool2d", "max")


def convert_global_lp_pool(node: OnnxNode) -> Expr:
    """GlobalLpPool: (sum over the spatial axes of |x|^p)^(1/p)."""
    p, dtype = _lp_order(node), node.out_type().dtype
    axes = tuple(range(2, len(node.shape(0))))
    powered = _power(call("abs", node.expr(0)), p, dtype)
    return _root(call("sum", powered, axis=axes, keepdims=True), p, dtype)


def _unpooled_shape(node: OnnxNode) -> tuple[int, ...]:
    """The shape the pooling would undo: (in - 1) * stride + kernel - pads per spatial axis."""
    shape, rank = node.shape(0), len(node.shape(0)) - 2
    kernel = _kernel(node, rank)
    strides = tuple(node.attr("strides", [1] * rank))
    pads = tuple(node.attr("pads", [0] * 2 * rank))
    sizes = [
        (shape[2 + d] - 1) * strides[d] + kernel[d] - pads[d] - pads[rank + d] for d in range(rank)
    ]
    return (*shape[:2], *sizes)


def convert_max_unpool(node: OnnxNode) -> Value:
    """MaxUnpool: zeros with X's values written at the flat positions I names (MaxPool's
    Indices) of the unpooled shape (scatter_elements over it flattened); an output_shape input
    larger than that pads zeros at the ends, as ONNX's reference does."""
    shape, dtype = _unpooled_shape(node), node.input(0).type.dtype
    zeros = call("broadcast_to", const(np.zeros((), dtype)), shape=(math.prod(shape),))
    indices = call("reshape", node.expr(1), newshape=(-1,))
    values = call("reshape", node.expr(0), newshape=(-1,))
    flat = call("scatter_elements", zeros, indices, values, axis=0)
    out = call("reshape", flat, newshape=shape)
    if not node.has_input(2):
        return Value(out, TensorType(shape, dtype))
    wanted = tuple(int(d) for d in node.static(2, "output_shape"))
    if len(wanted) != len(shape) or any(w < s for w, s in zip(wanted, shape, strict=True)):
        raise node.error(
            f"output_shape {list(wanted)} is smaller than the unpooled shape "
            f"{list(shape)} or of another rank"
        )
    widths = [(0, w - s) for w, s in zip(wanted, shape, strict=True)]
    padded = call("nn.pad", out, const(np.zeros((), dtype)), pad_width=widths)
    return Value(padded, TensorType(wanted, dtype))


# Joined into the family's TABLE (conv_pool.py or image.py), not a table of its own.
TABLE: dict[str, tuple[Entry, ...]] = {
    "MaxPool": every_opset(convert_max_pool),
    "AveragePool": every_opset(convert_average_pool),  # dilations from 19
    "LpPool": every_opset(convert_lp_pool),  # p an int from 11; dilations, ceil_mode from 18
    "GlobalAveragePool": every_opset(convert_global_average_pool),
    "GlobalMaxPool": every_opset(convert_global_max_pool),
    "GlobalLpPool": every_opset(convert_global_lp_pool),
    "MaxUnpool": every_opset(convert_max_unpool, first=9),
}
