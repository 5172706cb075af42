"""shape_to_tensor: symbolic sizes as a tensor the graph computes with (Relax's
`R.shape_to_tensor`), so a shape computation that an import cannot fold into shapes (a
dimension cast to float, a shape added to a tensor, a negative index wrapped by a symbolic
axis) is computed when the graph runs, at that run's sizes."""

from __future__ import annotations

import numpy as np

from tessel import te
from tessel.arith.dims import dim_text, normalize_dim
from tessel.graph.op.common import np_dtype
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.ir import builders
from tessel.support.dtype import DataType


def _shape_to_tensor_rel(args: Args, attrs: Attrs) -> Type:
    count = int(np.prod(attrs.shape)) if attrs.shape else 1
    if len(attrs.sizes) != count:
        raise args.error(
            "sizes",
            f"has {len(attrs.sizes)} sizes but a tensor of shape {list(attrs.shape)} holds {count}",
        )
    if not DataType.of(attrs.dtype).is_integer and not DataType.of(attrs.dtype).is_float:
        raise args.error("dtype", f"must be an integer or floating-point dtype, not {attrs.dtype}")
    return TensorType(tuple(attrs.shape), attrs.dtype)


def _shape_to_tensor_lower(*, attrs: Attrs) -> te.Tensor:
    values = [normalize_dim(v) for v in attrs.sizes]
    shape = tuple(attrs.shape)

    def element(*index):
        flat = builders.const(0, "int64")
        for i, extent in zip(index, shape, strict=True):
            flat = flat * extent + builders.cast(i, "int64")
        result = builders.const(0, "int64")
        for k in reversed(range(len(values))):
            value = builders.const(values[k], "int64") if isinstance(values[k], int) else values[k]
            result = value if k == len(values) - 1 else builders.select(flat == k, value, result)
        return builders.cast(result, attrs.dtype)

    return te.compute(shape, element, name="T_shape_to_tensor")


def _shape_to_tensor_ref(*, attrs: Attrs) -> np.ndarray:
    # The evaluator has given every symbol its size (evaluate.py's _sized_attrs).
    if any(not isinstance(v, int) for v in attrs.sizes):
        raise TypeError(
            "shape_to_tensor of symbolic sizes "
            f"[{', '.join(dim_text(normalize_dim(v)) for v in attrs.sizes)}] needs the sizes"
        )
    return np.array(attrs.sizes, dtype=np_dtype(attrs.dtype)).reshape(attrs.shape)


OPERATORS = (
    OpDef(
        "shape_to_tensor",
        (),
        (Attr("sizes", "dims"), Attr("shape", "ints", ()), Attr("dtype", "dtype", "int64")),
        _shape_to_tensor_rel,
        _shape_to_tensor_lower,
        _shape_to_tensor_ref,
        OpPattern.INJECTIVE,
        "A tensor of `shape` (row-major) holding `sizes`, integers or symbolic "
        "sizes, evaluated when the graph runs (Relax's R.shape_to_tensor).",
    ),
)

__all__ = ["OPERATORS"]
