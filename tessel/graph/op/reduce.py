"""Reductions: sum, mean, max, min, prod, argmax, argmin, variance (Relay's, with a mean argument),
and the running sum cumsum and product cumprod. A reduction over an empty axis is its identity
(sum 0, prod 1, max -inf or the dtype's lowest, min +inf, mean NaN)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from tessel import topi
from tessel.graph.op.common import expect_float, reduce_axes, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.topi import reduction as topi_reduction


def reduced_axes(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    """The reduced axes, sorted, of a reduction call whose attributes passed the type
    relation (`axis` normalized, `exclude` applied)."""
    if attrs.axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(sorted({a % ndim for a in attrs.axis}))
    return tuple(a for a in range(ndim) if a not in axes) if attrs.exclude else axes


def _reduced_type(
    data: TensorType, axes: tuple[int, ...], keepdims: bool, dtype: str | None = None
) -> TensorType:
    if keepdims:
        shape = tuple(1 if d in axes else n for d, n in enumerate(data.shape))
    else:
        shape = tuple(n for d, n in enumerate(data.shape) if d not in axes)
    return same_as(data, shape, dtype)


def _reduce_rel(float_only: bool, dtype: str | None = None) -> Callable[..., Type]:
    def relation(args: Args, attrs: Attrs) -> Type:
        data = expect_float(args, "data") if float_only else args.tensor("data")
        axes = reduce_axes(args, attrs.axis, data.ndim, attrs.exclude)
        return _reduced_type(data, axes, attrs.keepdims, dtype)

    return relation


def _reduce_lower(topi_fn: Callable) -> Callable:
    def lower(data, *, attrs: Attrs):
        return topi_fn(data, reduced_axes(attrs, data.ndim), attrs.keepdims)

    return lower


def _extreme(dtype: np.dtype, largest: bool) -> object:
    """The largest (or smallest) value of `dtype`: the identity of min (or max)."""
    if dtype == np.bool_:
        return largest
    if np.issubdtype(dtype, np.floating):
        return np.inf if largest else -np.inf
    info = np.iinfo(dtype)
    return info.max if largest else info.min


def _reduce_ref(np_fn: Callable) -> Callable:
    def reference(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        axes = reduced_axes(attrs, data.ndim)
        wide = data.astype(np.float64) if np.issubdtype(data.dtype, np.floating) else data
        extra = {}
        if np_fn in (np.max, np.min):  # over an empty axis: the identity, as TOPI writes it
            extra["initial"] = _extreme(wide.dtype, largest=np_fn is np.min)
        with warnings.catch_warnings(), np.errstate(invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty axis is NaN
            result = np_fn(wide, axis=axes, keepdims=attrs.keepdims, **extra)
        return np.asarray(result).astype(data.dtype)

    return reference


def _arg_lower(topi_fn: Callable) -> Callable:
    def lower(data, *, attrs: Attrs):
        return topi_fn(
            data, reduced_axes(attrs, data.ndim), attrs.keepdims, attrs.select_last_index
        )

    return lower


def _arg_ref(np_fn: Callable) -> Callable:
    """argmax/argmin over several axes at once: over those axes flattened, as TOPI does."""

    def reference(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        axes = reduced_axes(attrs, data.ndim)
        kept = [d for d in range(data.ndim) if d not in axes]
        moved = data.transpose(*kept, *axes)
        flat = moved.reshape(*moved.shape[: len(kept)], -1)
        if attrs.select_last_index:
            index = flat.shape[-1] - 1 - np_fn(flat[..., ::-1], axis=-1)
        else:
            index = np_fn(flat, axis=-1)
        out_type = _reduced_type(TensorType(data.shape), axes, attrs.keepdims)
        return index.reshape(out_type.shape).astype(np.int32)

    return reference


def _variance_rel(args: Args, attrs: Attrs) -> Type:
    data = expect_float(args, "data")
    mean = args.tensor("mean")
    args.same_dtype("mean", "data")
    axes = reduce_axes(args, attrs.axis, data.ndim, attrs.exclude)
    kept = _reduced_type(data, axes, True)
    if mean.shape != kept.shape:
        raise args.error(
            "mean", f"has shape {list(mean.shape)}, expected {list(kept.shape)} (keepdims means)"
        )
    return _reduced_type(data, axes, attrs.keepdims)


def _variance_count(attrs: Attrs, shape: tuple[int, ...]) -> int:
    count = math.prod(shape[a] for a in reduced_axes(attrs, len(shape)))
    return count - 1 if attrs.unbiased else count


def _variance_lower(data, mean, *, attrs: Attrs):
    deviation = topi.subtract(data, mean)
    squares = topi.multiply(deviation, deviation)
    total = topi.sum(squares, reduced_axes(attrs, data.ndim), attrs.keepdims)
    return topi.divide(total, float(_variance_count(attrs, data.const_shape())))


def _variance_ref(data: np.ndarray, mean: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    deviation = data.astype(np.float64) - mean
    total = (deviation * deviation).sum(
        axis=reduced_axes(attrs, data.ndim), keepdims=attrs.keepdims
    )
    return (total / _variance_count(attrs, data.shape)).astype(data.dtype)


_REDUCE_ATTRS = (
    Attr("axis", "ints", None, optional=True),
    Attr("keepdims", "bool", False),
    Attr("exclude", "bool", False),
)


def _reduce(name: str, topi_fn: Callable, np_fn: Callable, float_only: bool, doc: str) -> OpDef:
    return OpDef(
        name,
        ("data",),
        _REDUCE_ATTRS,
        _reduce_rel(float_only),
        _reduce_lower(topi_fn),
        _reduce_ref(np_fn),
        OpPattern.COMM_REDUCE,
        doc,
    )


def _arg_reduce(name: str, topi_fn: Callable, np_fn: Callable, doc: str) -> OpDef:
    return OpDef(
        name,
        ("data",),
        (*_REDUCE_ATTRS, Attr("select_last_index", "bool", False)),
        _reduce_rel(False, "int32"),
        _arg_lower(topi_fn),
        _arg_ref(np_fn),
        OpPattern.COMM_REDUCE,
        doc,
    )


def _cumsum_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    args.axis("axis", attrs.axis, data.ndim)
    if attrs.dtype == "bool":
        raise args.error("dtype", "cannot be bool", hint="sum in an integer dtype")
    return same_as(data, dtype=attrs.dtype or None)


def _cumsum_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    dtype = np.dtype(attrs.dtype or data.dtype)
    total = np.cumsum(data.astype(dtype), axis=attrs.axis, dtype=dtype)
    if attrs.exclusive:
        total = total - data.astype(dtype)
    return total.astype(dtype)


def _cumprod_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    args.axis("axis", attrs.axis, data.ndim)
    if data.dtype == "bool":
        raise args.error("data", "cannot be bool", hint="multiply in an integer dtype")
    return data


def _cumprod_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    """The running product; exclusive: of the data shifted one place along the axis, a 1 first
    (not a division, which a zero would break)."""
    if attrs.exclusive and data.shape[attrs.axis] > 0:
        ones = np.ones_like(np.take(data, [0], axis=attrs.axis))
        rest = np.take(data, np.arange(data.shape[attrs.axis] - 1), axis=attrs.axis)
        data = np.concatenate([ones, rest], axis=attrs.axis)
    with np.errstate(over="ignore"):
        return np.cumprod(data, axis=attrs.axis, dtype=data.dtype)


OPERATORS = (
    _reduce("sum", topi.sum, np.sum, False, "The sum over `axis`."),
    _reduce("mean", topi.mean, np.mean, True, "The mean over `axis`."),
    _reduce("max", topi.max, np.max, False, "The largest element over `axis`."),
    _reduce("min", topi.min, np.min, False, "The smallest element over `axis`."),
    _reduce("prod", topi.prod, np.prod, False, "The product over `axis`."),
    _arg_reduce("argmax", topi.argmax, np.argmax, "The int32 index of the largest element."),
    _arg_reduce("argmin", topi.argmin, np.argmin, "The int32 index of the smallest element."),
    OpDef(
        "cumsum",
        ("data",),
        (Attr("axis", "int"), Attr("dtype", "dtype", ""), Attr("exclusive", "bool", False)),
        _cumsum_rel,
        lambda x, *, attrs: topi.cumsum(x, attrs.axis, attrs.dtype or None, attrs.exclusive),
        _cumsum_ref,
        OpPattern.OPAQUE,
        "The running sum along `axis` (`exclusive`: each element left out of its own sum).",
    ),
    OpDef(
        "cumprod",
        ("data",),
        (Attr("axis", "int"), Attr("exclusive", "bool", False)),
        _cumprod_rel,
        lambda x, *, attrs: topi_reduction.cumprod(x, attrs.axis, attrs.exclusive),
        _cumprod_ref,
        OpPattern.OPAQUE,
        "The running product along `axis` (`exclusive`: each element left out of its own).",
    ),
    OpDef(
        "variance",
        ("data", "mean"),
        (*_REDUCE_ATTRS, Attr("unbiased", "bool", False)),
        _variance_rel,
        _variance_lower,
        _variance_ref,
        OpPattern.COMM_REDUCE,
        "The mean squared deviation of data from `mean` (keepdims means) over `axis`.",
    ),
)

__all__ = ["OPERATORS"]
