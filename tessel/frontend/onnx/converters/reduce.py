"""Reductions: ReduceMean/Sum/Max/Min/Prod, the norms ReduceL1/L2/SumSquare, ArgMax/ArgMin, and
the running sum CumSum.

The reduced axes are an attribute until the opset where they became an input (13 for ReduceSum,
18 for the others); an input may be omitted or empty, which reduces every axis unless
`noop_with_empty_axes` is set.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, fold
from tessel.graph.expr import Expr

Result = Expr | np.ndarray

# op type -> (Relay reduction, NumPy reduction for inputs known at import)
REDUCTIONS: dict[str, tuple[str, Callable[..., np.ndarray]]] = {
    "ReduceMean": ("mean", np.mean),
    "ReduceSum": ("sum", np.sum),
    "ReduceMax": ("max", np.max),
    "ReduceMin": ("min", np.min),
    "ReduceProd": ("prod", np.prod),
}


def _axes(node: OnnxNode) -> tuple[int, ...] | None:
    """The normalised, sorted axes to reduce; None for no reduction at all (identity)."""
    ndim = len(node.shape(0))
    axes_as_input = node.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_as_input:
        given = node.static_or(1, "axes", np.array([], dtype=np.int64)).tolist()
    else:
        given = list(node.attr("axes", []))
    if not given:
        if axes_as_input and node.attr("noop_with_empty_axes", 0):
            return None
        return tuple(range(ndim))
    return tuple(sorted({node.axis(int(a), ndim, "axis") for a in given}))


def _reduce(node: OnnxNode, relay_name: str, data: Expr, axes: tuple[int, ...]) -> Expr:
    return call(relay_name, data, axis=axes, keepdims=bool(node.attr("keepdims", 1)))


def convert_reduce(node: OnnxNode) -> Result:
    """ReduceMean/Sum/Max/Min/Prod: the Relay reduction of the same name."""
    relay_name, fold = REDUCTIONS[node.op_type]
    axes = _axes(node)
    if node.all_constant():
        data = node.input(0).data
        if axes is None:
            return data
        keepdims = bool(node.attr("keepdims", 1))
        return np.asarray(fold(data, axis=axes, keepdims=keepdims)).astype(data.dtype)
    if axes is None:
        return node.expr(0)
    return _reduce(node, relay_name, node.expr(0), axes)


def convert_reduce_norm(node: OnnxNode) -> Expr:
    """ReduceL1 = sum |x|, ReduceL2 = sqrt(sum x^2), ReduceSumSquare = sum x^2."""
    axes = _axes(node)
    x = node.expr(0)
    if axes is None:
        return x
    if node.op_type == "ReduceL1":
        return _reduce(node, "sum", call("abs", x), axes)
    squares = _reduce(node, "sum", call("multiply", x, x), axes)
    return call("sqrt", squares) if node.op_type == "ReduceL2" else squares


def convert_arg_reduce(node: OnnxNode) -> Expr:
    """ArgMax / ArgMin: argmax / argmin over one axis (int64 indices, as ONNX)."""
    ndim = len(node.shape(0))
    out = call(
        node.op_type.lower(),
        node.expr(0),
        axis=(node.axis(node.attr("axis", 0), ndim),),
        keepdims=bool(node.attr("keepdims", 1)),
        select_last_index=bool(node.attr("select_last_index", 0)),
    )
    # Relay's argmax yields int32; ONNX's yields int64.
    return call("cast", out, dtype="int64")


def _flip(value: Result, axis: int, extent: int) -> Result:
    """`value` reversed along `axis`: strided_slice with stride -1 (its end written -(extent + 1),
    "before index 0", as Slice's converter writes it)."""
    if isinstance(value, np.ndarray):
        return np.flip(value, axis)
    return call("strided_slice", value, begin=(extent - 1,), end=(-(extent + 1),), strides=(-1,),
                axes=(axis,))  # fmt: skip


def convert_cumsum(node: OnnxNode) -> Result:
    """CumSum: cumsum(axis=, exclusive=) along the axis given as input 1; `reverse` sums from
    the end, as cumsum of the data flipped along the axis, flipped back."""
    shape = node.shape(0)
    axis = node.axis(int(node.static(1, "axis").reshape(())), len(shape))
    exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
    data = node.input(0).data if node.input(0).is_constant else node.expr(0)
    if reverse:
        data = _flip(data, axis, shape[axis])
    if isinstance(data, np.ndarray):
        total: Result = fold("cumsum", data, axis=axis, exclusive=exclusive)
    else:
        total = call("cumsum", data, axis=axis, exclusive=exclusive)
    return _flip(total, axis, shape[axis]) if reverse else total


TABLE: dict[str, tuple[Entry, ...]] = {
    # reductions: axes are an attribute before 13 (ReduceSum) / 18 (others), then an input
    **{op: every_opset(convert_reduce) for op in REDUCTIONS},
    "ReduceL1": every_opset(convert_reduce_norm),
    "ReduceL2": every_opset(convert_reduce_norm),
    "ReduceSumSquare": every_opset(convert_reduce_norm),
    "ArgMax": every_opset(convert_arg_reduce),
    "ArgMin": every_opset(convert_arg_reduce),
    "CumSum": every_opset(convert_cumsum),
}
