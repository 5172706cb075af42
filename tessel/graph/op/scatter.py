"""Operators that write at positions held in a tensor: scatter_elements, scatter_nd."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import topi
from tessel.graph.op.common import same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.support.dtype import DataType

_REDUCTIONS = ("update", "add", "mul", "min", "max")

# How an update combines with the element it lands on (NumPy's unbuffered ufunc.at semantics).
_COMBINE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "update": lambda old, new: new,
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
}


def _scatter_args(args: Args, reduction: str, name: str) -> Type:
    data = args.tensor("data")
    indices = args.tensor("indices")
    args.tensor("updates")
    args.same_dtype("updates", "data")
    if not DataType.of(indices.dtype).is_integer:
        raise args.error("indices", f"must be an integer tensor, got dtype {indices.dtype}")
    if reduction not in _REDUCTIONS:
        raise args.error(name, f"must be one of {list(_REDUCTIONS)}, got {reduction!r}")
    return data


def _scatter_elements_rel(args: Args, attrs: Attrs) -> Type:
    data = _scatter_args(args, attrs.reduction, "reduction")
    indices, updates = args.tensor("indices"), args.tensor("updates")
    args.axis("axis", attrs.axis, data.ndim)
    if indices.shape != updates.shape or indices.ndim != data.ndim:
        raise args.error(
            "updates",
            f"of shape {list(updates.shape)} must have the shape of indices "
            f"{list(indices.shape)} and the rank of data {data.ndim}",
        )
    return same_as(data)


def _wrap(index: np.ndarray, extent: int) -> np.ndarray:
    return np.where(index < 0, index + extent, index).astype(np.int64)


def _scatter_elements_ref(data, indices, updates, *, attrs: Attrs) -> np.ndarray:
    axis, out = attrs.axis % data.ndim, data.copy()
    combine = _COMBINE[attrs.reduction]
    for j in np.ndindex(*indices.shape):  # in order, so the last "update" of an element wins
        target = list(j)
        target[axis] = _wrap(indices[j], data.shape[axis])
        out[tuple(target)] = combine(out[tuple(target)], updates[j])
    return out


def _scatter_nd_rel(args: Args, attrs: Attrs) -> Type:
    data = _scatter_args(args, attrs.mode, "mode")
    indices, updates = args.tensor("indices"), args.tensor("updates")
    depth = indices.shape[0] if indices.ndim else 0
    wanted = (*indices.shape[1:], *data.shape[depth:])
    if indices.ndim < 1 or depth > data.ndim or updates.shape != wanted:
        raise args.error(
            "updates",
            f"has shape {list(updates.shape)}, but indices "
            f"{list(indices.shape)} into data {list(data.shape)} need "
            f"{list(wanted)}",
        )
    return same_as(data)


def _scatter_nd_ref(data, indices, updates, *, attrs: Attrs) -> np.ndarray:
    depth, out = indices.shape[0], data.copy()
    combine = _COMBINE[attrs.mode]
    for y in np.ndindex(*indices.shape[1:]):
        target = tuple(_wrap(indices[(m, *y)], data.shape[m]) for m in range(depth))
        out[target] = combine(out[target], updates[y])
    return out


OPERATORS = (
    OpDef(
        "scatter_elements",
        ("data", "indices", "updates"),
        (Attr("axis", "int", 0), Attr("reduction", "str", "update")),
        _scatter_elements_rel,
        lambda d, i, u, *, attrs: topi.scatter_elements(d, i, u, attrs.axis, attrs.reduction),
        _scatter_elements_ref,
        OpPattern.OPAQUE,
        "data with updates[j] combined into the element at j with `axis` replaced by indices[j].",
    ),
    OpDef(
        "scatter_nd",
        ("data", "indices", "updates"),
        (Attr("mode", "str", "update"),),
        _scatter_nd_rel,
        lambda d, i, u, *, attrs: topi.scatter_nd(d, i, u, attrs.mode),
        _scatter_nd_ref,
        OpPattern.OPAQUE,
        "data with updates[y] combined into data[indices[:, y]] (TVM's layout of indices).",
    ),
)

__all__ = ["OPERATORS"]
