"""Data layouts as TVM writes them ("NCHW", "NCHW16c", "OIHW8i16o") and `layout_transform`
between two layouts of the same axes.

An upper-case letter is a primal axis; a number then the same letter in lower case is a sub-axis
of that primal axis with that factor (the block): "NCHW16c" is (N, C // 16, H, W, 16), and the
channel index is c_outer * 16 + c_inner. A primal axis has at most one sub-axis, and a sub-axis
comes after its primal axis (TVM's rule)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tessel.ir.expr import PrimExpr
from tessel.support.errors import UserError
from tessel.te.operation import compute
from tessel.te.tensor import Tensor
from tessel.topi.utils import expect_tensor, get_const_tuple, op_error

_AXIS = re.compile(r"(\d*)([A-Za-z])")


class LayoutError(UserError):
    """A layout string that is not one, or two layouts that do not name the same axes."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A parsed layout: `axes` in order, each ("C", 0) for a primal axis or ("c", 16) for a
    sub-axis of C with factor 16."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @property
    def primal(self) -> str:
        """The primal axes in order: "NCHW" for "NCHW16c"."""
        return "".join(a for a, _ in self.axes if a.isupper())

    def is_blocked(self, primal: str, sub_axes: str) -> bool:
        """Whether this is the axes `primal` then the sub-axes `sub_axes`, in order: "NCHW16c"
        is ("NCHW", "c"), "OIHW8i16o" is ("OIHW", "io")."""
        return self.primal == primal and [a for a, _ in self.axes[len(primal) :]] == list(sub_axes)

    def factor(self, axis: str) -> int:
        """The sub-axis factor of primal `axis` (0 when it is not split)."""
        return next((f for a, f in self.axes if a == axis.lower()), 0)

    def shape(self, primal_shape: Sequence[int], *, what: str = "shape") -> tuple[int, ...]:
        """The shape in this layout of a tensor whose primal extents are `primal_shape` (in the
        order of `primal`); a factor must divide its axis."""
        extents = dict(zip(self.primal, primal_shape, strict=True))
        shape = []
        for axis, factor in self.axes:
            if factor:
                shape.append(factor)
                continue
            block = self.factor(axis)
            if block and extents[axis] % block:
                raise LayoutError(
                    f"layout {self.name}: axis {axis} of the {what} has extent {extents[axis]}, "
                    f"which its block {block} does not divide",
                    rule="layout.divisible",
                )
            shape.append(extents[axis] // block if block else extents[axis])
        return tuple(shape)

    def primal_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The primal extents (in the order of `primal`) of a tensor of `shape` in this layout."""
        sizes = dict(zip((a for a, _ in self.axes), shape, strict=True))
        return tuple(
            sizes[a] * (sizes.get(a.lower(), 1) if self.factor(a) else 1) for a in self.primal
        )

    def primal_indices(self, indices: Sequence[PrimExpr]) -> dict[str, PrimExpr]:
        """The primal index of each primal axis, from indices in this layout."""
        named = dict(zip((a for a, _ in self.axes), indices, strict=True))
        out = {}
        for axis in self.primal:
            block = self.factor(axis)
            out[axis] = named[axis] * block + named[axis.lower()] if block else named[axis]
        return out

    def indices(self, primal: dict[str, PrimExpr]) -> tuple[PrimExpr, ...]:
        """Indices in this layout from the primal index of each primal axis."""
        out = []
        for axis, factor in self.axes:
            if factor:
                out.append(primal[axis.upper()] % factor)
            else:
                block = self.factor(axis)
                out.append(primal[axis] // block if block else primal[axis])
        return tuple(out)


@lru_cache(maxsize=256)
def layout(name: str) -> Layout:
    """Parse a layout string such as "NCHW16c" (TVM's tvm.tir.layout)."""
    if not isinstance(name, str) or not name:
        raise LayoutError(
            f"a layout is a string such as 'NCHW16c', got {name!r}", rule="layout.syntax"
        )
    axes: list[tuple[str, int]] = []
    position = 0
    for match in _AXIS.finditer(name):
        if match.start() != position:
            break
        position = match.end()
        digits, letter = match.groups()
        if letter.isupper():
            if digits:
                raise _syntax(name, f"a primal axis ({letter}) takes no factor")
            if any(a == letter for a, _ in axes):
                raise _syntax(name, f"axis {letter} appears twice")
            axes.append((letter, 0))
            continue
        if not digits or int(digits) < 1:
            raise _syntax(
                name, f"sub-axis {letter} needs a positive factor before it, as in 16{letter}"
            )
        if not any(a == letter.upper() for a, _ in axes) or any(a == letter for a, _ in axes):
            raise _syntax(
                name,
                f"sub-axis {letter} must follow its primal axis {letter.upper()} and appear once",
            )
        axes.append((letter, int(digits)))
    if position != len(name):
        raise _syntax(name, f"unexpected {name[position:]!r}")
    return Layout(name, tuple(axes))


def _syntax(name: str, message: str) -> LayoutError:
    return LayoutError(f"layout {name!r}: {message}", rule="layout.syntax")


def transform_array(array: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    """NumPy's `layout_transform`: `array`, in `src_layout`, rewritten in `dst_layout` (the
    reference of the operator, and how a constant is transformed at compile time)."""
    src, dst = layout(src_layout), layout(dst_layout)
    if sorted(src.primal) != sorted(dst.primal) or array.ndim != len(src.axes):
        raise LayoutError(
            f"cannot transform an array of shape {array.shape} from {src.name} to {dst.name}",
            rule="layout.transform",
        )
    names = [a for a, _ in src.axes]
    # To the primal layout of `src`: each blocked axis next to its block, then merged.
    grouped = [a for axis in src.primal for a in (axis, axis.lower()) if a in names]
    primal = array.transpose([names.index(a) for a in grouped]).reshape(
        src.primal_shape(array.shape)
    )
    # Then each axis split by its block in `dst`, and the axes in `dst`'s order.
    split, order = [], []
    for axis, extent in zip(src.primal, primal.shape, strict=True):
        block = dst.factor(axis)
        if block and extent % block:
            raise LayoutError(
                f"layout {dst.name}: axis {axis} has extent {extent}, which its "
                f"block {block} does not divide",
                rule="layout.divisible",
            )
        split += [extent // block, block] if block else [extent]
        order += [axis, axis.lower()] if block else [axis]
    blocked = primal.reshape(split)
    return np.ascontiguousarray(blocked.transpose([order.index(a) for a, _ in dst.axes]))


def layout_transform(array: Tensor, src_layout: str, dst_layout: str) -> Tensor:
    """`array`, in `src_layout`, rewritten in `dst_layout` (the same primal axes, blocked
    differently): "NCHW" to "NCHW16c" and back."""
    op = "layout_transform"
    expect_tensor(op, "array", array)
    src, dst = layout(src_layout), layout(dst_layout)
    if sorted(src.primal) != sorted(dst.primal):
        raise op_error(op, "dst_layout", f"{dst.name} does not have the axes of {src.name}")
    shape = get_const_tuple(array.shape)
    if len(shape) != len(src.axes):
        raise op_error(
            op, "array", f"has rank {len(shape)}, but {src.name} has {len(src.axes)} axes"
        )
    primal = dict(zip(src.primal, src.primal_shape(shape), strict=True))
    out_shape = dst.shape([primal[a] for a in dst.primal], what="array")

    def element(*indices: PrimExpr) -> PrimExpr:
        return array[src.indices(dst.primal_indices(indices))]

    return compute(out_shape, element, name="T_layout_trans", tag="injective")


__all__ = ["Layout", "LayoutError", "layout", "layout_transform", "transform_array"]
