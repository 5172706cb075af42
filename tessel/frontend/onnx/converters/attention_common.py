"""Building blocks shared by the attention and recurrent converters: operands that are either
known at import (NumPy arrays, folded by the operator's own reference) or graph expressions."""

from __future__ import annotations

from typing import Any

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const, fold, tuple_of
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr

Operand = Expr | np.ndarray


def as_expr(x: Operand) -> Expr:
    """`x` as a graph expression (a Constant for an array)."""
    return const(x) if isinstance(x, np.ndarray | np.generic) else x


def apply(name: str, *args: Operand, **attrs: Any) -> Operand:
    """`name(args..., attrs...)`: folded by the operator's reference when every argument is an
    array (masks and offsets known at import stay constants), else a call."""
    if all(isinstance(a, np.ndarray | np.generic) for a in args):
        return fold(name, *(np.asarray(a) for a in args), **attrs)
    return call(name, *(as_expr(a) for a in args), **attrs)


def operand(value: Value) -> Operand:
    """An input as an operand: its array when known at import, else its expression."""
    return value.data if value.is_constant else value.expr


def optional_operand(node: OnnxNode, index: int) -> Operand | None:
    """Input `index` as an operand, or None when omitted."""
    return operand(node.input(index)) if node.has_input(index) else None


def scalar(value: float, dtype: str) -> np.ndarray:
    """A 0-d array of `dtype`."""
    return np.asarray(value, dtype=dtype)


def reshape(x: Operand, shape: tuple[int, ...]) -> Operand:
    """`x` reshaped (folded for arrays)."""
    if isinstance(x, np.ndarray | np.generic):
        return np.reshape(x, shape)
    return reshaped(x, shape)


def reshaped(x: Expr, shape: tuple[int, ...]) -> Expr:
    """`x` reshaped to exactly `shape` (a 0 is an empty dimension, not Relay's "copy")."""
    return call("reshape", x, newshape=shape, allowzero=True)


def transpose(x: Operand, axes: tuple[int, ...]) -> Operand:
    """`x` with its axes permuted (folded for arrays)."""
    if isinstance(x, np.ndarray | np.generic):
        return np.ascontiguousarray(np.transpose(x, axes))
    return call("transpose", x, axes=axes)


def slice_axis(x: Operand, axis: int, begin: int, end: int, stride: int = 1) -> Operand:
    """x[..., begin:end:stride, ...] along `axis` (folded for arrays)."""
    if isinstance(x, np.ndarray | np.generic):
        index = [slice(None)] * x.ndim
        index[axis] = slice(begin, end, stride)
        return np.ascontiguousarray(x[tuple(index)])
    return call("strided_slice", x, begin=(begin,), end=(end,), strides=(stride,), axes=(axis,))


def concatenate(parts: list[Operand], axis: int) -> Operand:
    """The parts joined along `axis` (one part is itself; folded when all are arrays)."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, np.ndarray | np.generic) for p in parts):
        return np.concatenate(parts, axis=axis)
    return call("concatenate", tuple_of([as_expr(p) for p in parts]), axis=axis)
