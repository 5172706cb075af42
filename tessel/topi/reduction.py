"""Reductions over axes (TVM's topi.sum, max, min, prod, all, any, argmax, argmin), Relay's
mean and variance, and the running product cumprod, as te computes.

Every reduction takes `axis` as None (all axes), an int or a list of ints (negative axes count
from the end), and `keepdims` (keep each reduced axis with extent 1). Reducing over no axes
(`axis=[]`, or a rank-0 tensor) copies the data, as NumPy does; reducing over an empty axis
writes the reduction's identity (argmax and argmin refuse it: there is no index to give).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr
from tessel.support.dtype import DataType
from tessel.te.reduction import highest, lowest
from tessel.te.tensor import Tensor
from tessel.topi.utils import (
    expect_tensor,
    normalize_axes,
    normalize_axis,
    op_error,
    shape_str,
)

COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


# ----------------------------------------------------------------------------------------------
# Shared machinery: output shape and the index into the data


def _output_shape(data: Tensor, axes: tuple[int, ...], keepdims: bool) -> list[PrimExpr]:
    if keepdims:
        return [builders.const(1, e.dtype) if d in axes else e for d, e in enumerate(data.shape)]
    return [e for d, e in enumerate(data.shape) if d not in axes]


def _data_index(
    ndim: int,
    axes: tuple[int, ...],
    keepdims: bool,
    out_index: Sequence[Any],
    reduce_vars: Sequence[Any],
) -> tuple[Any, ...]:
    """The data element read for output `out_index` at the reduction point `reduce_vars`."""
    kept = iter(out_index if not keepdims else [out_index[d] for d in range(ndim) if d not in axes])
    reduced = iter(reduce_vars)
    return tuple(next(reduced) if d in axes else next(kept) for d in range(ndim))


def _reduce_axes(data: Tensor, axes: tuple[int, ...]) -> list[Any]:
    return [te.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]


def _prepare(op: str, data: Any, axis: Any) -> tuple[Tensor, tuple[int, ...]]:
    data = expect_tensor(op, "data", data)
    return data, normalize_axes(op, axis, data.ndim)


def _copy(data: Tensor, name: str) -> Tensor:
    """The reduction over no axes: the data itself (a new tensor, so it can be an output)."""
    return te.compute(data.shape, lambda *i: data[i], name=name, tag=COMM_REDUCE)


def _has_empty_axis(data: Tensor, axes: tuple[int, ...]) -> bool:
    """True if some reduced axis has extent 0: the reduction has no element to combine."""
    return builtins.any(
        isinstance(data.shape[d], IntImm) and data.shape[d].value == 0 for d in axes
    )


def _fill(shape: Sequence[PrimExpr], value: PrimExpr, name: str, tag: str) -> Tensor:
    """A tensor of `shape` holding `value` everywhere."""
    return te.compute(shape, lambda *i: value, name=name, tag=tag)


def reduced_index(index: Sequence[Any], axes: Sequence[int]) -> tuple[Any, ...]:
    """The element of a keepdims reduction over `axes` that belongs to data element `index`
    (for operators built from reductions, such as softmax and layer_norm)."""
    return tuple(0 if d in axes else i for d, i in enumerate(index))


def _comm_reduce(
    op: str,
    data: Any,
    axis: Any,
    keepdims: bool,
    reducer: Callable[..., Any],
    name: str | None = None,
) -> Tensor:
    """Reduce `data` over `axis` with a te reducer (te.sum, te.max, a comm_reducer)."""
    data, axes = _prepare(op, data, axis)
    name = name or f"T_{op}"
    if not axes:
        return _copy(data, name)
    if _has_empty_axis(data, axes):
        # A reduction over no element is its identity (sum 0, max -inf, ...). Computed as a
        # reduction, its loop over the empty axis would never run and never write the
        # identity, which is written on the loop's first iteration.
        identity = builders.cast(reducer.fidentity(data.dtype), data.dtype)
        return _fill(_output_shape(data, axes, keepdims), identity, name, COMM_REDUCE)
    ks = _reduce_axes(data, axes)

    def fcompute(*index: Any) -> PrimExpr:
        return reducer(data[_data_index(data.ndim, axes, keepdims, index, ks)], axis=ks)

    return te.compute(_output_shape(data, axes, keepdims), fcompute, name=name, tag=COMM_REDUCE)


def _expect_dtype(op: str, data: Tensor, wanted: Callable[[DataType], bool], what: str) -> None:
    if not wanted(DataType.of(data.dtype)):
        raise op_error(op, "data", f"expected a {what} tensor, got {data.dtype}")


# ----------------------------------------------------------------------------------------------
# sum, max, min, prod, all, any

_all_reducer = te.comm_reducer(builders.logical_and, lambda t: builders.const(True, t), name="all")
_any_reducer = te.comm_reducer(builders.logical_or, lambda t: builders.const(False, t), name="any")


def sum(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 (TVM's name)
    """The sum of the elements over `axis`."""
    return _comm_reduce("sum", data, axis, keepdims, te.sum)


def max(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The largest element over `axis`."""
    return _comm_reduce("max", data, axis, keepdims, te.max)


def min(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The smallest element over `axis`."""
    return _comm_reduce("min", data, axis, keepdims, te.min)


def prod(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The product of the elements over `axis`."""
    return _comm_reduce("prod", data, axis, keepdims, te.prod)


def all(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """True where every element over `axis` is true (data is bool)."""
    _expect_dtype("all", expect_tensor("all", "data", data), lambda d: d.is_bool, "bool")
    return _comm_reduce("all", data, axis, keepdims, _all_reducer)


def any(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """True where some element over `axis` is true (data is bool)."""
    _expect_dtype("any", expect_tensor("any", "data", data), lambda d: d.is_bool, "bool")
    return _comm_reduce("any", data, axis, keepdims, _any_reducer)


# ----------------------------------------------------------------------------------------------
# argmax, argmin: a tuple reduction of (index, value)


def _arg_reducer(better: Callable[[Any, Any], PrimExpr], last: bool, name: str) -> Any:
    """A (index, value) reducer keeping the `better` value; ties go to the first index, or the
    last with `last`. The identity's index loses every tie (int32 max for first, -1 for last),
    so a data value equal to the identity's value (-inf for argmax) still wins."""
    index_wins = builders.gt if last else builders.lt

    def fcombine(x: tuple[Any, Any], y: tuple[Any, Any]) -> tuple[PrimExpr, PrimExpr]:
        tie = builders.logical_and(builders.eq(x[1], y[1]), index_wins(x[0], y[0]))
        take_x = builders.logical_or(better(x[1], y[1]), tie)
        return builders.select(take_x, x[0], y[0]), builders.select(take_x, x[1], y[1])

    def fidentity(index_dtype: str, value_dtype: str) -> tuple[PrimExpr, PrimExpr]:
        index = -1 if last else DataType.of(index_dtype).max_value()
        value = lowest(value_dtype) if name == "argmax" else highest(value_dtype)
        return builders.const(index, index_dtype), value

    return te.comm_reducer(fcombine, fidentity, name=name)


_ARG_REDUCERS = {
    ("argmax", False): _arg_reducer(builders.gt, False, "argmax"),
    ("argmax", True): _arg_reducer(builders.gt, True, "argmax"),
    ("argmin", False): _arg_reducer(builders.lt, False, "argmin"),
    ("argmin", True): _arg_reducer(builders.lt, True, "argmin"),
}


def _flat_index(data: Tensor, axes: tuple[int, ...], ks: Sequence[Any]) -> PrimExpr:
    """The row-major position of the reduction point among the reduced axes, as int32."""
    index = builders.cast(ks[0].var, "int32")
    for d, k in zip(axes[1:], ks[1:], strict=True):
        index = index * builders.cast(data.shape[d], "int32") + builders.cast(k.var, "int32")
    return index


def _arg_reduce(op: str, data: Any, axis: Any, keepdims: bool, select_last_index: bool) -> Tensor:
    data, axes = _prepare(op, data, axis)
    out_shape = _output_shape(data, axes, keepdims)
    if not axes:
        return te.compute(
            out_shape, lambda *i: builders.const(0, "int32"), name=f"T_{op}", tag=COMM_REDUCE_IDX
        )
    if _has_empty_axis(data, axes):
        raise op_error(
            op,
            "data",
            f"has no element to take the {op} of: a reduced axis of "
            f"shape {shape_str(data.shape)} is empty",
        )
    reducer = _ARG_REDUCERS[(op, bool(select_last_index))]
    ks = _reduce_axes(data, axes)

    def fcompute(*index: Any) -> list[PrimExpr]:
        value = data[_data_index(data.ndim, axes, keepdims, index, ks)]
        return reducer((_flat_index(data, axes, ks), value), axis=ks)

    index, _value = te.compute(out_shape, fcompute, name=f"T_{op}", tag=COMM_REDUCE_IDX)
    return index


def argmax(
    data: Tensor, axis: Any = None, keepdims: bool = False, select_last_index: bool = False
) -> Tensor:
    """The int32 index of the largest element over `axis` (flattened over several axes); ties
    give the first index, or the last with `select_last_index`."""
    return _arg_reduce("argmax", data, axis, keepdims, select_last_index)


def argmin(
    data: Tensor, axis: Any = None, keepdims: bool = False, select_last_index: bool = False
) -> Tensor:
    """The int32 index of the smallest element over `axis` (flattened over several axes); ties
    give the first index, or the last with `select_last_index`."""
    return _arg_reduce("argmin", data, axis, keepdims, select_last_index)


# ----------------------------------------------------------------------------------------------
# mean, variance (Relay's ops, with topi's argument conventions)


def _count(data: Tensor, axes: tuple[int, ...]) -> PrimExpr:
    """The number of elements reduced, as an int expression."""
    count: PrimExpr = builders.const(1, "int32")
    for d in axes:
        count = count * builders.cast(data.shape[d], "int32")
    return count


def _divide(op: str, total: Tensor, divisor: PrimExpr) -> Tensor:
    divisor = builders.cast(divisor, total.dtype)
    return te.compute(total.shape, lambda *i: total[i] / divisor, name=f"T_{op}", tag="elemwise")


def mean(data: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean over `axis` (floating-point data)."""
    data, axes = _prepare("mean", data, axis)
    _expect_dtype("mean", data, lambda d: d.is_float, "floating-point")
    total = _comm_reduce("mean", data, axes, keepdims, te.sum, name="T_mean_sum")
    return _divide("mean", total, _count(data, axes)) if axes else total


def variance(
    data: Tensor, axis: Any = None, keepdims: bool = False, unbiased: bool = False
) -> Tensor:
    """The variance over `axis`: the mean squared deviation from the mean, divided by n - 1
    instead of n when `unbiased` (computed in two passes, for accuracy)."""
    data, axes = _prepare("variance", data, axis)
    _expect_dtype("variance", data, lambda d: d.is_float, "floating-point")
    center = mean(data, axes, keepdims=True)

    def squared_deviation(*i: Any) -> PrimExpr:
        deviation = data[i] - center[reduced_index(i, axes)]
        return deviation * deviation

    deviations = te.compute(data.shape, squared_deviation, name="T_sq_dev", tag="elemwise")
    total = _comm_reduce("variance", deviations, axes, keepdims, te.sum, name="T_variance_sum")
    count = _count(data, axes) - (1 if unbiased else 0)
    return _divide("variance", total, count)


# ----------------------------------------------------------------------------------------------
# cumprod: the running product (cumsum's scan, in tessel.topi.scan, with te.prod)


def cumprod(data: Tensor, axis: int, exclusive: bool = False) -> Tensor:
    """The running product of `data` along `axis`; `exclusive` leaves each element out of its
    own product (the first is 1). Each output element reduces the prefix it covers, as cumsum."""
    data = expect_tensor("cumprod", "data", data)
    axis = normalize_axis("cumprod", axis, data.ndim)
    extent = data.shape[axis]
    if not isinstance(extent, IntImm):
        raise op_error("cumprod", "data", f"axis {axis} must have a constant extent")
    if extent.value == 0:
        return _fill(data.shape, builders.const(1, data.dtype), "T_cumprod", "cumprod")

    def prefix(*i: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((0, extent), name="k")
        covered = k.var < i[axis] if exclusive else k.var <= i[axis]
        return te.prod(data[i[:axis] + (k.var,) + i[axis + 1 :]], axis=k, where=covered)

    return te.compute(data.shape, prefix, name="T_cumprod")
