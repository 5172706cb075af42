"""Reductions: ReduceMean/Sum/Max/Min/Prod, the norms ReduceL1/L2/SumSquare, ReduceLogSum and
ReduceLogSumExp, ArgMax/ArgMin, and the running CumSum and CumProd.

The reduced axes are an attribute until the opset where they became an input (13 for ReduceSum,
18 for the others); an input may be omitted or empty, which reduces every axis unless
`noop_with_empty_axes` is set (then only the elementwise part runs: ReduceL1 is |x|, as onnx's
reference computes it). A reduction over an empty axis gives its identity (sum 0, max -inf, mean
NaN, log-sum -inf), which the TOPI reductions write.

Each converter is written once with `apply`, which folds at import when its inputs are arrays
and builds a call otherwise, so folding has exactly the semantics of the graph.
"""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.graph.expr import Expr

Result = Expr | np.ndarray


def apply(name: str, *values: Result, **attrs: object) -> Result:
    """`name(values..., attrs...)`: folded by the operator's reference when every value is an
    array, a call (arrays as constants) otherwise."""
    if all(isinstance(v, np.ndarray) for v in values):
        with np.errstate(all="ignore"):  # log(0) = -inf, 0 / 0 = NaN are the results wanted
            return fold(name, *values, **attrs)
    return call(name, *(const(v) if isinstance(v, np.ndarray) else v for v in values), **attrs)


def data_of(node: OnnxNode, index: int = 0) -> Result:
    """Input `index` as an array when known at import, else as an expression."""
    value = node.input(index)
    return value.data if value.is_constant else value.expr


def reshape(value: Result, shape: tuple[int, ...] | list[int]) -> Result:
    """`value` with the (fully given) `shape`: allowzero, so a 0 is an empty axis, not Relay's
    "copy this axis"."""
    return apply("reshape", value, newshape=tuple(shape), allowzero=True)


def scalar(value: float, dtype: str) -> np.ndarray:
    """A rank-0 array of `dtype` (a graph constant or a folding operand)."""
    return np.asarray(value, dtype=dtype)


def _axes(node: OnnxNode) -> tuple[int, ...]:
    """The normalised, sorted axes to reduce; () with noop_with_empty_axes and no axes."""
    ndim = len(node.shape(0))
    axes_as_input = node.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_as_input:
        given = node.static_or(1, "axes", np.array([], dtype=np.int64)).reshape(-1).tolist()
    else:
        given = list(node.attr("axes", []))
    if not given:
        if axes_as_input and node.attr("noop_with_empty_axes", 0):
            return ()
        return tuple(range(ndim))
    axes = sorted({node.axis(int(a), ndim, "axis") for a in given})
    if len(axes) != len(given):
        raise node.error(f"axes {given} name an axis twice")
    return tuple(axes)


class _Reduction:
    """One node's reduction: its data, axes and keepdims, and the calls it needs."""

    def __init__(self, node: OnnxNode) -> None:
        self.node, self.axes = node, _axes(node)
        self.keepdims = bool(node.attr("keepdims", 1))
        self.dtype = node.input(0).type.dtype
        self.data = data_of(node)

    def reduce(self, relay_name: str, value: Result, keepdims: bool | None = None) -> Result:
        """`relay_name` (sum, max, ...) of `value` over the node's axes; no call without axes."""
        if not self.axes:
            return value
        keep = self.keepdims if keepdims is None else keepdims
        return apply(relay_name, value, axis=self.axes, keepdims=keep)

    def count(self) -> int:
        """The number of elements each output element reduces."""
        shape = self.node.shape(0)
        return math.prod(shape[a] for a in self.axes)

    def expect_float(self) -> None:
        """Refuse integer data for the reductions defined through log / exp."""
        if not self.dtype.startswith(("float", "bfloat")):
            raise self.node.error(f"is defined for floating-point data only, got {self.dtype}")


def _mean(r: _Reduction) -> Result:
    """ReduceMean: mean for floats; for integers the sum divided by the count, truncated as
    onnxruntime's integer division does."""
    if not r.axes:
        return r.data
    if r.dtype.startswith(("float", "bfloat")):
        return r.reduce("mean", r.data)
    return apply("divide", r.reduce("sum", r.data), scalar(max(r.count(), 1), r.dtype))


def _l2(r: _Reduction) -> Result:
    """ReduceL2: sqrt(sum x^2); integer data takes the root in float64 and truncates, as onnx's
    reference does."""
    squares = r.reduce("sum", apply("multiply", r.data, r.data))
    if r.dtype.startswith(("float", "bfloat")):
        return apply("sqrt", squares)
    return apply("cast", apply("sqrt", apply("cast", squares, dtype="float64")), dtype=r.dtype)


def _log_sum(r: _Reduction) -> Result:
    """ReduceLogSum: log(sum x) (-inf over an empty axis)."""
    r.expect_float()
    return apply("log", r.reduce("sum", r.data))


def _log_sum_exp(r: _Reduction) -> Result:
    """ReduceLogSumExp, shifted by the maximum m for stability: log(sum exp(x - m)) + m, with
    m = 0 where the maximum is infinite (an empty axis, a row of -inf, or a +inf element)."""
    r.expect_float()
    top = r.reduce("max", r.data, keepdims=True)
    zero = scalar(0, r.dtype)
    shift = apply("where", apply("isinf", top), zero, top)
    total = r.reduce("sum", apply("exp", apply("subtract", r.data, shift)), keepdims=True)
    out = apply("add", apply("log", total), shift)
    if r.keepdims or not r.axes:
        return out
    return apply("squeeze", out, axis=r.axes)


# op type -> the reduction of its data, from the node's _Reduction
REDUCTIONS = {
    "ReduceSum": lambda r: r.reduce("sum", r.data),
    "ReduceMax": lambda r: r.reduce("max", r.data),
    "ReduceMin": lambda r: r.reduce("min", r.data),
    "ReduceProd": lambda r: r.reduce("prod", r.data),
    "ReduceMean": _mean,
    "ReduceL1": lambda r: r.reduce("sum", apply("abs", r.data)),
    "ReduceL2": _l2,
    "ReduceSumSquare": lambda r: r.reduce("sum", apply("multiply", r.data, r.data)),
    "ReduceLogSum": _log_sum,
    "ReduceLogSumExp": _log_sum_exp,
}


def convert_reduce(node: OnnxNode) -> Result:
    """Every Reduce* operator: its composition of graph reductions and elementwise ops."""
    reduction = _Reduction(node)
    if reduction.dtype == "bool" and node.op_type not in ("ReduceMax", "ReduceMin"):
        raise node.error("bool data is supported by ReduceMax and ReduceMin only")
    return REDUCTIONS[node.op_type](reduction)


def convert_arg_reduce(node: OnnxNode) -> Result:
    """ArgMax / ArgMin: argmax / argmin over one axis (int64 indices, as ONNX)."""
    shape = node.shape(0)
    axis = node.axis(node.attr("axis", 0), max(len(shape), 1))
    if shape and shape[axis] == 0:
        raise node.error(f"axis {axis} of the data {list(shape)} is empty: it has no arg-extremum")
    out = apply(
        node.op_type.lower(),
        data_of(node),
        axis=(axis,),
        keepdims=bool(node.attr("keepdims", 1)),
        select_last_index=bool(node.attr("select_last_index", 0)),
    )
    # Relay's argmax yields int32; ONNX's yields int64.
    return apply("cast", out, dtype="int64")


def _flip(value: Result, axis: int, extent: int) -> Result:
    """`value` reversed along `axis`: strided_slice with stride -1 (its end written -(extent + 1),
    "before index 0", as Slice's converter writes it)."""
    if isinstance(value, np.ndarray):
        return np.flip(value, axis)
    return call(
        "strided_slice",
        value,
        begin=(extent - 1,),
        end=(-(extent + 1),),
        strides=(-1,),
        axes=(axis,),
    )


def convert_cumulative(node: OnnxNode) -> Result:
    """CumSum / CumProd: cumsum / cumprod(axis=, exclusive=) along the axis given as input 1;
    `reverse` runs from the end, as the scan of the data flipped along the axis, flipped back."""
    shape = node.shape(0)
    axis = node.axis(int(node.static(1, "axis").reshape(())), max(len(shape), 1))
    if not shape:
        raise node.error("the data is a scalar; it must have at least one axis")
    exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
    data = data_of(node)
    if reverse:
        data = _flip(data, axis, shape[axis])
    total = apply(
        "cumsum" if node.op_type == "CumSum" else "cumprod", data, axis=axis, exclusive=exclusive
    )
    return _flip(total, axis, shape[axis]) if reverse else total


TABLE: dict[str, tuple[Entry, ...]] = {
    # reductions: axes are an attribute before 13 (ReduceSum) / 18 (others), then an input
    **{op: every_opset(convert_reduce) for op in REDUCTIONS},
    "ArgMax": every_opset(convert_arg_reduce),
    "ArgMin": every_opset(convert_arg_reduce),
    "CumSum": every_opset(convert_cumulative),
    "CumProd": every_opset(convert_cumulative, first=26),
}
