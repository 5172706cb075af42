"""Tensor contraction over chosen axis pairs (TVM's topi.tensordot, numpy.tensordot's axes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel import te
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.nn.utils import same_extent
from tessel.topi.utils import expect_tensor, normalize_axis, op_error, shape_str

OP = "tensordot"


def tensordot(a: Tensor, b: Tensor, axes: Any) -> Tensor:
    """The sum of products of `a` and `b` over pairs of axes: `axes` = n pairs the last n axes
    of `a` with the first n of `b`; `axes` = (a_axes, b_axes) pairs them in order (each an int
    or a list). The result has a's remaining axes, then b's."""
    expect_tensor(OP, "a", a)
    expect_tensor(OP, "b", b)
    if a.dtype != b.dtype:
        raise op_error(
            OP,
            "b",
            f"dtype {b.dtype} differs from {a.dtype} of `a`",
            hint="cast one operand with topi.cast",
        )
    a_axes, b_axes = _axis_pairs(a, b, axes)
    for x, y in zip(a_axes, b_axes, strict=True):
        if not same_extent(a.shape[x], b.shape[y]):
            raise op_error(
                OP,
                "axes",
                f"axis {x} of `a` (shape {shape_str(a.shape)}) has extent {a.shape[x]} but axis "
                f"{y} of `b` (shape {shape_str(b.shape)}) has {b.shape[y]}",
            )
    a_free = [d for d in range(a.ndim) if d not in a_axes]
    b_free = [d for d in range(b.ndim) if d not in b_axes]
    reduce_axes = [te.reduce_axis((0, a.shape[x]), name=f"k{n}") for n, x in enumerate(a_axes)]

    def contraction(*indices: Any) -> PrimExpr:
        a_index: list[Any] = [None] * a.ndim
        b_index: list[Any] = [None] * b.ndim
        free = list(indices)
        for d in a_free:
            a_index[d] = free.pop(0)
        for d in b_free:
            b_index[d] = free.pop(0)
        for k, x, y in zip(reduce_axes, a_axes, b_axes, strict=True):
            a_index[x] = b_index[y] = k.var
        product = a[tuple(a_index)] * b[tuple(b_index)]
        return te.sum(product, axis=reduce_axes) if reduce_axes else product

    shape = [a.shape[d] for d in a_free] + [b.shape[d] for d in b_free]
    names = [f"i{n}" for n in range(len(a_free))] + [f"j{n}" for n in range(len(b_free))]
    return te.compute(
        shape, contraction, name="T_tensordot", tag="tensordot", varargs_names=names or None
    )


def _axis_pairs(a: Tensor, b: Tensor, axes: Any) -> tuple[list[int], list[int]]:
    """The contracted axes of `a` and of `b`, normalised and checked (distinct, in range)."""
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise op_error(
                OP,
                "axes",
                f"{axes} axes cannot be contracted between tensors of rank {a.ndim} and {b.ndim}",
            )
        return list(range(a.ndim - axes, a.ndim)), list(range(axes))
    if not isinstance(axes, Sequence) or isinstance(axes, str) or len(axes) != 2:
        raise op_error(OP, "axes", f"expected an int or a pair (a_axes, b_axes), got {axes!r}")
    a_axes, b_axes = _axis_list(a, "a", axes[0]), _axis_list(b, "b", axes[1])
    if len(a_axes) != len(b_axes):
        raise op_error(
            OP, "axes", f"{len(a_axes)} axes of `a` are paired with {len(b_axes)} axes of `b`"
        )
    return a_axes, b_axes


def _axis_list(tensor: Tensor, name: str, side: Any) -> list[int]:
    items = [side] if isinstance(side, int) else side
    if not isinstance(items, Sequence) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in items
    ):
        raise op_error(OP, "axes", f"the axes of `{name}` are ints, got {side!r}")
    result = [normalize_axis(OP, x, tensor.ndim, "axes") for x in items]
    if len(set(result)) != len(result):
        raise op_error(OP, "axes", f"the axes {list(items)} of `{name}` name an axis twice")
    return result
