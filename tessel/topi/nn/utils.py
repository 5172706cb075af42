"""Attribute helpers shared by the convolution operators: padding tuples, stride and dilation
pairs, and output extents."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from tessel.ir.expr import IntImm
from tessel.ir.structural import structural_equal
from tessel.te.tensor import Tensor
from tessel.topi.utils import expect_rank, expect_tensor, get_const_tuple, op_error, shape_str


def _as_int(value: Any) -> int | None:
    """`value` as a Python int when it is a constant integer (bools are not), else None."""
    if isinstance(value, IntImm):
        return int(value.value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)  # also NumPy integers
    return None


def get_pad_tuple(
    padding: Any, kernel: Sequence[int], *, op: str = "get_pad_tuple", argument: str = "padding"
) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, (height, width), (top, left, bottom, right), or
    "SAME" / "VALID" for a `kernel` of (height, width) (TVM's get_pad_tuple)."""
    if isinstance(padding, str):
        if padding == "VALID":
            return 0, 0, 0, 0
        if padding != "SAME":
            raise op_error(op, argument, f"expected 'SAME', 'VALID' or integers, got {padding!r}")
        # SAME keeps the extent at stride 1; an odd total puts the extra row at the top (TVM).
        total_h, total_w = kernel[0] - 1, kernel[1] - 1
        top, left = (total_h + 1) // 2, (total_w + 1) // 2
        return top, left, total_h - top, total_w - left
    items = [padding] if _as_int(padding) is not None else padding
    if not isinstance(items, list | tuple) or len(items) not in (1, 2, 4):
        raise op_error(
            op, argument, f"expected an int, (h, w) or (top, left, bottom, right), got {padding!r}"
        )
    values = [_as_int(v) for v in items]
    if any(v is None or v < 0 for v in values):
        raise op_error(op, argument, f"paddings are non-negative integers, got {padding!r}")
    if len(values) == 1:
        return values[0], values[0], values[0], values[0]
    if len(values) == 2:
        return values[0], values[1], values[0], values[1]
    return values[0], values[1], values[2], values[3]


def get_pair(op: str, argument: str, value: Any, minimum: int = 1) -> tuple[int, int]:
    """(h, w) from an int or a pair of ints, each at least `minimum` (strides, dilations)."""
    items = [value] * 2 if _as_int(value) is not None else value
    if not isinstance(items, list | tuple) or len(items) != 2:
        raise op_error(op, argument, f"expected an int or a pair (h, w), got {value!r}")
    values = [_as_int(v) for v in items]
    if any(v is None or v < minimum for v in values):
        raise op_error(op, argument, f"expected integers >= {minimum}, got {value!r}")
    return values[0], values[1]


def conv_out_extent(
    op: str, size: int, kernel: int, pad_total: int, stride: int, dilation: int
) -> int:
    """The output extent of a convolution along one axis (at least 1, or an error)."""
    dilated = (kernel - 1) * dilation + 1
    if size + pad_total < dilated:
        raise op_error(
            op,
            "padding",
            f"the padded input extent {size + pad_total} is smaller than the dilated kernel "
            f"extent {dilated}",
        )
    return (size + pad_total - dilated) // stride + 1


def same_extent(x: Any, y: Any) -> bool:
    """True if two extents are provably equal: equal constants, or the same expression."""
    cx, cy = _as_int(x), _as_int(y)
    if cx is not None and cy is not None:
        return cx == cy
    return structural_equal(x, y, map_free_vars=False)


def expect_const_shape(op: str, argument: str, tensor: Any, rank: int) -> tuple[int, ...]:
    """The shape of a tensor argument of `rank` as ints (convolutions need constant shapes)."""
    expect_tensor(op, argument, tensor)
    expect_rank(op, argument, tensor, rank)
    if not isinstance(tensor, Tensor) or tensor.const_shape() is None:
        raise op_error(op, argument, f"expected a constant shape, got {shape_str(tensor.shape)}")
    return get_const_tuple(tensor.shape)


def expect_batched_shape(op: str, argument: str, tensor: Any, rank: int) -> tuple[Any, ...]:
    """The shape of a tensor argument of `rank`: its first axis (the batch) an int or a
    symbolic extent, every other axis an int (a convolution compiled once for every batch
    size)."""
    expect_tensor(op, argument, tensor)
    expect_rank(op, argument, tensor, rank)
    rest = [_as_int(e) for e in tensor.shape[1:]]
    if any(e is None for e in rest):
        raise op_error(
            op,
            argument,
            f"expected constant extents past the batch axis, got {shape_str(tensor.shape)}",
        )
    batch = _as_int(tensor.shape[0])
    return (tensor.shape[0] if batch is None else batch, *rest)
