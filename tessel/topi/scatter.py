"""Operators that write a tensor at positions held in another (TVM's tvm.topi scatter_elements
and scatter_nd), as te computes.

TVM writes scatters as sequential loops; a te compute cannot store through an index, so here each
output element gathers the updates aimed at it instead: a reduction over the updates, restricted
(`where=`) to those whose index names the element, then combined with the data element. That
costs one pass over the updates per output element, which suits the small scatters of exported
models (attention masks, cache updates). "update" keeps the last update aimed at an element (the
largest update position), which is what sequential loops leave behind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.indexing import expect_indices, in_range
from tessel.topi.transform import INJECTIVE, ravel, unravel
from tessel.topi.utils import expect_tensor, get_const_tuple, normalize_axis, op_error

SCATTER_REDUCTIONS = ("update", "add", "mul", "min", "max")

_REDUCERS = {"add": te.sum, "mul": te.prod, "min": te.min, "max": te.max}
_COMBINE = {
    "add": builders.add,
    "mul": builders.mul,
    "min": builders.min_value,
    "max": builders.max_value,
}

# (index of an output element, point of an update) -> an update's value, or whether it lands there
Reads = Callable[[tuple[PrimExpr, ...], tuple[PrimExpr, ...]], PrimExpr]


def _all(conditions: Sequence[PrimExpr]) -> PrimExpr:
    result = builders.const(True, "bool")
    for condition in conditions:
        result = builders.logical_and(result, condition)
    return result


def _copy(data: Tensor, name: str) -> Tensor:
    return te.compute(data.shape, lambda *i: data[i], name=name, tag=INJECTIVE)


def _scatter(
    name: str,
    data: Tensor,
    extents: tuple[int, ...],
    update_at: Reads,
    aims_at: Reads,
    reduction: str,
) -> Tensor:
    """Each element `i` of `data` combined with the updates `update_at(i, k)` for the points `k`
    of `extents` where `aims_at(i, k)` holds."""
    if reduction == "update":
        return _scatter_last(name, data, extents, update_at, aims_at)

    def gathered(*i: PrimExpr) -> PrimExpr:
        ks = [te.reduce_axis((0, n), name=f"k{d}") for d, n in enumerate(extents)]
        at = tuple(k.var for k in ks)
        return _REDUCERS[reduction](update_at(i, at), axis=ks, where=aims_at(i, at))

    total = te.compute(data.shape, gathered, name=f"{name}_{reduction}")
    combine = _COMBINE[reduction]
    return te.compute(data.shape, lambda *i: combine(data[i], total[i]), name=name, tag=INJECTIVE)


def _scatter_last(
    name: str, data: Tensor, extents: tuple[int, ...], update_at: Reads, aims_at: Reads
) -> Tensor:
    """The last update aimed at each element (by its linear position), or the data element."""

    def last(*i: PrimExpr) -> PrimExpr:
        ks = [te.reduce_axis((0, n), name=f"k{d}") for d, n in enumerate(extents)]
        at = tuple(k.var for k in ks)
        position = builders.cast(ravel(at, extents), "int32")
        return te.max(position, axis=ks, where=aims_at(i, at))

    source = te.compute(data.shape, last, name=f"{name}_source")

    def write(*i: PrimExpr) -> PrimExpr:
        found = source[i]
        # Select evaluates both sides, so the update read must stay in bounds when nothing was
        # found; a floormod keeps it there, and unlike max(found, 0) no simplification under
        # `found >= 0` can drop it.
        wrapped = builders.floormod(found, builders.const(math.prod(extents), "int32"))
        return builders.select(found >= 0, update_at(i, tuple(unravel(wrapped, extents))), data[i])

    return te.compute(data.shape, write, name=name, tag=INJECTIVE)


def _check_reduction(op: str, reduction: str) -> None:
    if reduction not in SCATTER_REDUCTIONS:
        raise op_error(op, "reduction", f"expected one of {SCATTER_REDUCTIONS}, got {reduction!r}")


def scatter_elements(
    data: Tensor, indices: Tensor, updates: Tensor, axis: int = 0, reduction: str = "update"
) -> Tensor:
    """ONNX ScatterElements: `data` with `updates[j]` combined into the element at `j` with
    `axis` replaced by `indices[j]`; negative indices count from the end."""
    expect_tensor("scatter_elements", "data", data)
    indices = expect_indices("scatter_elements", indices)
    expect_tensor("scatter_elements", "updates", updates)
    _check_reduction("scatter_elements", reduction)
    shape, extents = get_const_tuple(data.shape), get_const_tuple(indices.shape)
    axis = normalize_axis("scatter_elements", axis, data.ndim)
    if get_const_tuple(updates.shape) != extents or len(extents) != data.ndim:
        raise op_error(
            "scatter_elements",
            "updates",
            f"shape {list(updates.shape)} must equal that of indices {list(extents)}, of the "
            f"rank of data {list(shape)}",
        )
    if 0 in extents:
        return _copy(data, "T_scatter_elements")

    def point(i: tuple[PrimExpr, ...], k: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        # the update at position k along `axis`, its other coordinates taken from i and clamped
        # into the updates so that reads stay in bounds (aims_at rules the clamped ones out)
        return tuple(
            k[0] if d == axis else builders.min_value(i[d], builders.const(n - 1, i[d].dtype))
            for d, n in enumerate(extents)
        )

    def aims_at(i: tuple[PrimExpr, ...], k: tuple[PrimExpr, ...]) -> PrimExpr:
        inside = [i[d] < n for d, n in enumerate(extents) if d != axis]
        target = in_range(indices[point(i, k)], shape[axis])
        return _all([*inside, builders.eq(target, builders.cast(i[axis], "int32"))])

    def update_at(i: tuple[PrimExpr, ...], k: tuple[PrimExpr, ...]) -> PrimExpr:
        return updates[point(i, k)]

    return _scatter("T_scatter_elements", data, (extents[axis],), update_at, aims_at, reduction)


def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, mode: str = "update") -> Tensor:
    """`data` with the slices `updates[y]` combined into `data[indices[:, y]]` (TVM's layout:
    indices (M, Y...), updates (Y..., data.shape[M:]...)); negative indices count from the end."""
    expect_tensor("scatter_nd", "data", data)
    indices = expect_indices("scatter_nd", indices)
    expect_tensor("scatter_nd", "updates", updates)
    _check_reduction("scatter_nd", mode)
    shape, index_shape = get_const_tuple(data.shape), get_const_tuple(indices.shape)
    depth, extents = (index_shape[0], index_shape[1:]) if index_shape else (0, ())
    wanted = (*extents, *shape[depth:])
    if indices.ndim < 1 or depth > data.ndim or get_const_tuple(updates.shape) != wanted:
        raise op_error(
            "scatter_nd",
            "updates",
            f"shape {list(updates.shape)} must be {list(wanted)} for indices "
            f"{list(index_shape)} and data {list(shape)}",
        )
    if 0 in extents:
        return _copy(data, "T_scatter_nd")

    def update_at(i: tuple[PrimExpr, ...], k: tuple[PrimExpr, ...]) -> PrimExpr:
        return updates[k + i[depth:]]

    def aims_at(i: tuple[PrimExpr, ...], k: tuple[PrimExpr, ...]) -> PrimExpr:
        return _all(
            [
                builders.eq(in_range(indices[(m, *k)], shape[m]), builders.cast(i[m], "int32"))
                for m in range(depth)
            ]
        )

    return _scatter("T_scatter_nd", data, extents, update_at, aims_at, mode)
