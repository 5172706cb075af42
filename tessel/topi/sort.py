"""The k largest or smallest elements along an axis (TVM's tvm.topi.topk), as te computes.

TVM sorts with an IR builder; here each element's rank (how many elements of its row come before
it in the order) is a counting reduction, and output position j gathers the one element whose
rank is j. That is quadratic in the axis length, but plain computes that schedule like any other;
exported models take the top k of short axes (classes, beams). Equal elements keep their order:
the lower index comes first, as ONNX's TopK requires.
"""

from __future__ import annotations

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.utils import expect_tensor, get_const_tuple, normalize_axis, op_error


def _with(index: tuple[PrimExpr, ...], axis: int, position: PrimExpr) -> tuple[PrimExpr, ...]:
    return index[:axis] + (position,) + index[axis + 1 :]


def _rank(data: Tensor, axis: int, largest: bool) -> Tensor:
    """How many elements of its row precede each element: the larger (smaller) ones, and the
    equal ones at lower indices."""
    extent = get_const_tuple(data.shape)[axis]

    def count(*i: PrimExpr) -> PrimExpr:
        r = te.reduce_axis((0, extent), name="r")
        other, mine = data[_with(i, axis, r.var)], data[i]
        beats = other > mine if largest else other < mine
        ahead = builders.logical_or(
            beats, builders.logical_and(builders.eq(other, mine), r.var < i[axis])
        )
        return te.sum(builders.cast(ahead, "int32"), axis=r)

    return te.compute(data.shape, count, name="T_topk_rank")


def topk(
    data: Tensor, k: int, axis: int = -1, largest: bool = True, dtype: str = "int64"
) -> list[Tensor]:
    """[values, indices] of the `k` largest (`largest`) or smallest elements along `axis`, in
    order (the lower index first among equal elements); indices in `dtype`."""
    expect_tensor("topk", "data", data)
    axis = normalize_axis("topk", axis, data.ndim)
    shape = get_const_tuple(data.shape)
    extent = shape[axis]
    if not 0 <= k <= extent:
        raise op_error("topk", "k", f"{k} must lie in [0, {extent}] (the extent of axis {axis})")
    out_shape = _with(shape, axis, k)
    rank = _rank(data, axis, largest)

    def pick(as_index: bool):
        """Output position j: the element of rank j, or its index."""

        def at(*j: PrimExpr) -> PrimExpr:
            r = te.reduce_axis((0, extent), name="r")
            found = builders.eq(rank[_with(j, axis, r.var)], builders.cast(j[axis], "int32"))
            read = builders.cast(r.var, dtype) if as_index else data[_with(j, axis, r.var)]
            return te.max(read, axis=r, where=found)  # exactly one element has rank j

        return at

    values = te.compute(out_shape, pick(False), name="T_topk_values")
    indices = te.compute(out_shape, pick(True), name="T_topk_indices")
    return [values, indices]
