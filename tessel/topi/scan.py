"""Running reductions along an axis (TVM's tvm.topi.cumsum), as te computes.

TVM scans sequentially with an IR builder; here each output element sums the prefix it covers
(a reduction with `where=`), quadratic in the axis length but a plain compute that schedules and
fuses like any other. Exported models scan short axes (positions, masks).
"""

from __future__ import annotations

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.te.tensor import Tensor
from tessel.topi.utils import expect_tensor, get_const_tuple, normalize_axis, op_error


def cumsum(
    data: Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> Tensor:
    """The running sum of `data` along `axis` (None: of `data` flattened), in `dtype` (default:
    the data's); `exclusive` leaves each element out of its own sum."""
    expect_tensor("cumsum", "data", data)
    if axis is None:
        raise op_error("cumsum", "axis", "must be given; reshape the data to 1-D for a flat sum")
    axis = normalize_axis("cumsum", axis, data.ndim)
    dtype = dtype or data.dtype
    if DataType.of(dtype).is_bool:
        raise op_error("cumsum", "dtype", "cannot sum in bool", hint="sum in an integer dtype")
    extent = get_const_tuple(data.shape)[axis]
    if extent == 0:
        return te.compute(data.shape, lambda *i: builders.const(0, dtype), name="T_cumsum")

    def prefix(*i: PrimExpr) -> PrimExpr:
        k = te.reduce_axis((0, extent), name="k")
        covered = k.var < i[axis] if exclusive else k.var <= i[axis]
        value = builders.cast(data[i[:axis] + (k.var,) + i[axis + 1 :]], dtype)
        return te.sum(value, axis=k, where=covered)

    return te.compute(data.shape, prefix, name="T_cumsum")
