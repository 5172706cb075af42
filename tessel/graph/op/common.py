"""Helpers shared by the operator families: result types, broadcasting, axes, NumPy dtypes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tessel.arith.dims import Dim, dim_text, dims_equal, normalize_dim
from tessel.graph.op.op_def import Args, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.support.dtype import DataType


def same_as(
    data: TensorType, shape: Sequence[int] | None = None, dtype: str | None = None
) -> TensorType:
    """A tensor type like `data`, with `shape` and/or `dtype` replaced."""
    return TensorType(
        tuple(data.shape if shape is None else shape), data.dtype if dtype is None else dtype
    )


def te_shape(tensor: Any) -> tuple[Dim, ...]:
    """A te tensor's shape as graph dimensions: ints, and the symbolic ones as expressions."""
    return tuple(normalize_dim(d) for d in tensor.shape)


def expect_float(args: Args, name: str) -> TensorType:
    """Argument `name`, a tensor of a floating-point dtype."""
    ty = args.tensor(name)
    if not DataType.of(ty.dtype).is_float:
        raise args.error(name, f"must be a floating-point tensor, got dtype {ty.dtype}")
    return ty


def expect_not_bool(args: Args, name: str) -> TensorType:
    """Argument `name`, a tensor of a numeric (not bool) dtype."""
    ty = args.tensor(name)
    if DataType.of(ty.dtype).is_bool:
        raise args.error(
            name,
            "is a bool tensor; arithmetic on bools is not defined",
            hint="cast it to an integer or float dtype first",
        )
    return ty


def broadcast_shapes(args: Args, names: Sequence[str]) -> tuple[Dim, ...]:
    """The NumPy broadcast of the shapes of arguments `names`, or an error naming the culprit.
    Symbolic dimensions broadcast when proved equal, or against a 1; two that may differ are
    refused (a size that could be 1 at run time would change the result's shape)."""
    shape: tuple[Dim, ...] = ()
    seen: list[str] = []
    for name in names:
        other = args.tensor(name).shape
        rank = max(len(shape), len(other))
        a = (1,) * (rank - len(shape)) + shape
        b = (1,) * (rank - len(other)) + other
        merged = []
        for dim, (x, y) in enumerate(zip(a, b, strict=True)):
            if dims_equal(x, y) or y == 1:
                merged.append(x)
            elif x == 1:
                merged.append(y)
            else:
                raise args.error(
                    name,
                    f"of shape {shape_list(other)} does not broadcast with shape "
                    f"{shape_list(shape)} of {' and '.join(f'`{s}`' for s in seen)}: dimension "
                    f"{dim - rank} is {dim_text(y)} against {dim_text(x)}",
                    hint="each dimension, counted from the last, must be equal or 1 in one of "
                    "them; symbolic ones provably so, which bounds on the symbols may show "
                    "(from_onnx's dims={'seq': (1, 512)})",
                )
        shape = tuple(merged)
        seen.append(name)
    return shape


def shape_list(shape: Sequence[Dim]) -> str:
    """A shape for messages as a list: `[1, 3]`, `[batch, 384]`."""
    return "[" + ", ".join(dim_text(d) for d in shape) + "]"


def reduce_axes(
    args: Args, axis: Sequence[int] | None, ndim: int, exclude: bool = False
) -> tuple[int, ...]:
    """The sorted axes a reduction runs over (None: all; `exclude`: all but those named)."""
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(sorted({args.axis("axis", a, ndim) for a in axis}))
        if len(axes) != len(axis):
            raise args.error("axis", f"{list(axis)} names an axis twice")
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def np_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of a graph dtype string."""
    return DataType.of(dtype).numpy


def as_dtype(value: np.ndarray, dtype: str) -> np.ndarray:
    """`value` as an array of `dtype`."""
    return np.asarray(value).astype(np_dtype(dtype), copy=False)


def in_dtype(fn: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """A unary reference that applies `fn` (NumPy warnings off: NaN and inf are results) and
    returns the result in the input's dtype."""

    def reference(x: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return reference


def float_unary_rel(args: Args, attrs: Attrs) -> Type:
    """The relation of a unary operator on floating-point tensors."""
    return expect_float(args, "data")


def numeric_unary_rel(args: Args, attrs: Attrs) -> Type:
    """The relation of a unary operator on numeric (not bool) tensors."""
    return expect_not_bool(args, "data")


def unary_op(name: str, relation, topi_fn, reference, doc: str) -> OpDef:
    """An elementwise operator of one tensor: `topi_fn` lowers it, `reference` (a NumPy
    function) computes it in the input's dtype."""
    return OpDef(
        name=name,
        arguments=("data",),
        attrs=(),
        relation=relation,
        lower=lambda x, *, attrs: topi_fn(x),
        reference=in_dtype(reference),
        pattern=OpPattern.ELEMWISE,
        doc=doc,
    )
