"""Sampling an N-D image at the positions a grid gives (ONNX's GridSample): nearest, linear and
cubic interpolation; zeros, border and reflection padding; align_corners.

Per spatial axis, the grid's normalised coordinate in [-1, 1] becomes a position in the input;
a position beyond the border region is clamped (border) or reflected (reflection) first, then
each interpolation tap reads the input at its index, with the same padding rule applied to the
index (ONNX's reference, onnx/reference/ops/op_grid_sample.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.utils import get_const_tuple, op_error

OP = "grid_sample"
MODES = ("nearest", "linear", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")
CUBIC_A = -0.75


@dataclass(frozen=True)
class _Axis:
    """One spatial axis of the input: its extent and the border region [low, high]."""

    extent: int
    align_corners: bool
    dtype: str

    @property
    def low(self) -> float:
        return 0.0 if self.align_corners else -0.5

    @property
    def high(self) -> float:
        return self.extent - 1.0 if self.align_corners else self.extent - 0.5

    def c(self, value: float) -> PrimExpr:
        return te.const(value, self.dtype)

    def position(self, g: PrimExpr) -> PrimExpr:
        """The input position of normalised coordinate g."""
        if self.align_corners:
            return (g + self.c(1.0)) * self.c((self.extent - 1) / 2.0)
        return ((g + self.c(1.0)) * self.c(float(self.extent)) - self.c(1.0)) * self.c(0.5)

    def reflect(self, x: PrimExpr) -> PrimExpr:
        """x reflected at the borders until it lies in [low, high]: the reflections repeat with
        period 2 * span, so this is low + span - |(x - low) mod (2 * span) - span|, which names
        x once (the reference's loop of reflections, unrolled)."""
        span = self.high - self.low
        if span <= 0:
            return self.c(self.low)
        phase = te.floormod(x - self.c(self.low), self.c(2 * span))
        return self.c(self.low + span) - te.abs(phase - self.c(span))

    def clamp_position(self, x: PrimExpr, padding: str) -> PrimExpr:
        """A position outside [low, high]: clamped into the input (border), reflected."""
        if padding == "zeros":
            return x
        outside = (x < self.c(self.low)) | (x > self.c(self.high))
        if padding == "border":
            moved = builders.min_value(
                builders.max_value(x, self.c(0.0)), self.c(self.extent - 1.0)
            )
        else:
            moved = self.reflect(x)
        return te.select(outside, moved, x)

    def index(self, i: PrimExpr, padding: str) -> tuple[PrimExpr, PrimExpr | None]:
        """(index to read, condition for reading anything) of integer tap position i."""
        last = builders.const(self.extent - 1, "int64")
        clamped = builders.min_value(builders.max_value(i, builders.const(0, "int64")), last)
        if padding == "zeros":
            return clamped, (i >= 0) & (i < self.extent)
        if padding == "border":
            return clamped, None
        # An integer reflected at half-integer (or, aligned, integer) borders: period 2E
        # (2(E - 1)), the second half of each period mirrored.
        period = 2 * self.extent if not self.align_corners else 2 * (self.extent - 1)
        if period == 0:
            return builders.const(0, "int64"), None
        phase = te.floormod(i, builders.const(period, "int64"))
        mirrored = builders.const(period - (0 if self.align_corners else 1), "int64") - phase
        return te.select(phase < self.extent, phase, mirrored), None


def _kernel(distance: PrimExpr, mode: str, dtype: str) -> PrimExpr:
    """The weight of a tap at `distance` from the position: linear's tent, or Keys' cubic
    (its polynomials for |d| <= 1 and 1 < |d| < 2, as the reference writes them)."""
    d = te.abs(distance)
    one = te.const(1.0, dtype)
    if mode == "linear":
        return one - d
    a = te.const(CUBIC_A, dtype)
    near = ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    far = ((a * d - a * 5.0) * d + a * 8.0) * d - a * 4.0
    return te.select(d <= one, near, far)


def grid_sample(
    data: Tensor,
    grid: Tensor,
    mode: str = "linear",
    padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Tensor:
    """data (N, C, *S) sampled at grid (N, *O, rank) into (N, C, *O); the grid's last axis
    lists coordinates innermost axis first (x, y[, z])."""
    if mode not in MODES or padding_mode not in PADDING_MODES:
        raise op_error(
            OP,
            "mode",
            f"{mode!r}/{padding_mode!r} is not one of {list(MODES)} / {list(PADDING_MODES)}",
        )
    shape, grid_shape = get_const_tuple(data.shape), get_const_tuple(grid.shape)
    rank = len(shape) - 2
    if grid_shape[-1] != rank or len(grid_shape) != rank + 2 or grid_shape[0] != shape[0]:
        raise op_error(OP, "grid", f"of shape {list(grid_shape)} does not fit data {list(shape)}")
    dtype = data.dtype
    axes = [_Axis(extent, align_corners, dtype) for extent in shape[2:]]

    # Each axis' sampling position is a stage of its own, read once per tap: inlined, the
    # padding's selects would repeat in every tap's expression.
    positions = [_positions(grid, axis, d, rank, mode, padding_mode) for d, axis in enumerate(axes)]

    # The taps are a reduction (2 or 4 per axis), so the body names one tap: unrolled, the
    # weights and padded indices of every tap would repeat the whole position expression.
    count, first = {"nearest": (1, 0), "linear": (2, 0), "cubic": (4, -1)}[mode]
    taps = [te.reduce_axis((0, count), name=f"tap{d}") for d in range(rank)] if count > 1 else []

    def fsample(n: PrimExpr, c: PrimExpr, *out: PrimExpr) -> PrimExpr:
        indices, conditions, weight = [], [], None
        for d, (axis, position) in enumerate(zip(axes, positions, strict=True)):
            x = position[(n, *out)]
            base = te.floor(x)
            offset = taps[d] + first if taps else builders.const(0, "int64")
            index, condition = axis.index(te.cast(base, "int64") + offset, padding_mode)
            indices.append(index)
            conditions += [condition] if condition is not None else []
            if taps:
                w = _kernel(x - base - te.cast(offset, dtype), mode, dtype)
                weight = w if weight is None else weight * w
        value = data[(n, c, *indices)]
        if conditions:
            value = te.if_then_else(builders.conjunction(conditions), value, te.const(0, dtype))
        return value if weight is None else te.sum(value * weight, axis=taps)

    return te.compute((shape[0], shape[1], *grid_shape[1:-1]), fsample, name=OP, tag=OP)


def _positions(grid: Tensor, axis: _Axis, d: int, rank: int, mode: str, padding: str) -> Tensor:
    """The input position along spatial axis d of every output, padding applied."""

    def fposition(n: PrimExpr, *out: PrimExpr) -> PrimExpr:
        x = axis.position(te.cast(grid[(n, *out, rank - 1 - d)], axis.dtype))
        if mode == "nearest":
            x = te.nearbyint(x)
        return axis.clamp_position(x, padding)

    return te.compute(grid.shape[:-1], fposition, name=f"{OP}_position{d}")


__all__ = ["MODES", "PADDING_MODES", "grid_sample"]
