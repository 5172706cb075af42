"""Constant tensors: full and full_like (TVM's topi.full / topi.full_like), and zeros_like /
ones_like, which TVM has as relay operators only: Tessel additions in topi for symmetry."""

from __future__ import annotations

from typing import Any

from tessel import te
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError, UserError
from tessel.te.tensor import Tensor
from tessel.topi.utils import const_like, expect_tensor, op_error

ELEMWISE = "elemwise"  # TVM's tag.ELEMWISE


def _fill_value(op: str, value: Any, dtype: str) -> PrimExpr:
    if isinstance(value, Tensor) or not isinstance(value, PrimExpr | int | float | bool):
        raise op_error(op, "fill_value", f"expected a scalar, got {type(value).__name__}")
    try:
        return const_like(value, dtype)
    except IRTypeError as err:
        raise op_error(op, "fill_value", f"{value!r} cannot be represented in {dtype}") from err


def full(shape: Any, dtype: str, fill_value: Any) -> Tensor:
    """A tensor of `shape` and `dtype` whose every element is `fill_value`."""
    try:
        dtype = str(DataType.of(dtype))
    except UserError as err:
        raise op_error("full", "dtype", f"{dtype!r} is not a data type") from err
    value = _fill_value("full", fill_value, dtype)
    return te.compute(shape, lambda *i: value, name="T_full", tag=ELEMWISE)


def full_like(x: Tensor, fill_value: Any) -> Tensor:
    """A tensor of x's shape and dtype whose every element is `fill_value`."""
    expect_tensor("full_like", "x", x)
    value = _fill_value("full_like", fill_value, x.dtype)
    return te.compute(x.shape, lambda *i: value, name="T_full_like", tag=ELEMWISE)


def zeros_like(x: Tensor) -> Tensor:
    """Zeros of x's shape and dtype (relay's zeros_like; a Tessel addition to topi)."""
    return full_like(expect_tensor("zeros_like", "x", x), 0)


def ones_like(x: Tensor) -> Tensor:
    """Ones of x's shape and dtype (relay's ones_like; a Tessel addition to topi)."""
    return full_like(expect_tensor("ones_like", "x", x), 1)
