"""Resize (opsets 10 to 19's modes) and Upsample, as separable per-axis interpolation.

Along each resized axis, output position y reads a few input positions (taps) with weights that
depend only on the static shapes, scales and attributes: they are computed at import with ONNX's
formulas (onnx/reference/ops/op_resize.py) for every coordinate transformation mode, nearest
rounding, linear and cubic (cubic_coeff_a, exclude_outside) and antialiased filters. The graph
then gathers the taps (take), weighs and sums them (multiply, sum), axis after axis, as ONNX's
reference does; tf_crop_and_resize's positions outside the input take the extrapolation value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_crop_and_resize")  # fmt: skip
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


@dataclass(frozen=True)
class Options:
    """The attributes that shape every axis' taps."""

    mode: str
    coordinates: str
    nearest: str
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False


@dataclass(frozen=True)
class Taps:
    """Output position y of one axis reads input positions index[y] with weights weight[y];
    outside[y] marks positions that take the extrapolation value instead (or None)."""

    index: np.ndarray  # (out, taps) int64, inside [0, extent)
    weight: np.ndarray  # (out, taps) float64
    outside: np.ndarray | None


def source_coordinates(
    options: Options, extent: int, out: int, scale: float, roi: tuple[float, float]
) -> np.ndarray:
    """The input coordinate each output position maps to (ONNX's coordinate_transformation_mode;
    `out` is the integer extent, scale * extent the real one)."""
    y, width = np.arange(out, dtype=np.float64), scale * extent
    mode = options.coordinates
    if mode == "align_corners":
        return np.zeros(out) if width == 1 else y * (extent - 1) / (width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            return np.full(out, (end - start) * (extent - 1) / 2 + start * (extent - 1))
        return y * (end - start) * (extent - 1) / (width - 1) + start * (extent - 1)
    if mode == "pytorch_half_pixel" and width == 1:
        return np.full(out, -0.5)
    offset = extent / 2 * (1 - out / width) if mode == "half_pixel_symmetric" else 0.0
    return offset + (y + 0.5) / scale - 0.5


def _nearest(x: np.ndarray, mode: str, scale: float) -> np.ndarray:
    """The nearest input position under nearest_mode ("simple": opset 10's floor when
    upsampling, ceil when downsampling, as onnxruntime)."""
    floor = np.floor(x)
    frac = x - floor
    if mode == "simple":
        mode = "floor" if scale >= 1 else "ceil"
    up = {
        "round_prefer_floor": frac > 0.5,
        "round_prefer_ceil": frac >= 0.5,
        "floor": np.zeros_like(frac, bool),
        "ceil": frac > 0,
    }[mode]
    return (floor + up).astype(np.int64)[:, None]


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic kernel at distance d."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _filter(options: Options, scale: float) -> tuple[np.ndarray, object]:
    """(offsets from the left neighbour, kernel of the distance) of linear or cubic; with
    antialias the kernel is stretched by 1 / scale when downsampling."""
    stretch = min(scale, 1.0) if options.antialias else 1.0
    reach = 1 if options.mode == "linear" else 2
    start = math.floor(-reach / stretch) + 1
    offsets = np.arange(start, 2 - start)
    if options.mode == "linear":
        return offsets, lambda d: np.clip(1 - np.abs(d * stretch), 0, 1)
    return offsets, lambda d: _cubic(d * stretch, options.cubic_a)


def axis_taps(
    options: Options, extent: int, out: int, scale: float, roi: tuple[float, float]
) -> Taps:
    """The taps of one resized axis."""
    x = source_coordinates(options, extent, out, scale, roi)
    outside = ((x < 0) | (x > extent - 1)) if options.coordinates == "tf_crop_and_resize" else None
    if options.mode == "nearest":
        index = _nearest(x, options.nearest, scale)
        return Taps(np.clip(index, 0, extent - 1), np.ones(index.shape), outside)
    # The left neighbour; at an exact position, the one before it (weight 0), as the reference.
    left = np.ceil(x) - 1
    offsets, kernel = _filter(options, scale)
    index = left[:, None].astype(np.int64) + offsets[None, :]
    weight = kernel(index - x[:, None])
    if options.antialias:
        weight = weight / weight.sum(axis=1, keepdims=True)
    if options.exclude_outside:
        weight = np.where((index < 0) | (index >= extent), 0.0, weight)
        total = weight.sum(axis=1, keepdims=True)
        weight = weight / np.where(total == 0, 1.0, total)
    return Taps(np.clip(index, 0, extent - 1), weight, outside)


def apply_taps(
    data: Expr, shape: tuple[int, ...], dtype: str, axis: int, taps: Taps, extrapolation: float
) -> Expr:
    """`data` resized along `axis`: gather the taps, weigh them and sum them."""
    out, count = taps.index.shape
    gathered = call("take", data, const(taps.index.reshape(-1)), axis=axis)
    if count == 1:
        value = gathered
    else:
        split = (*shape[:axis], out, count, *shape[axis + 1 :])
        trailing = (1,) * (len(shape) - axis - 1)
        weight = const(taps.weight.reshape(out, count, *trailing), dtype)
        product = call("multiply", call("reshape", gathered, newshape=split), weight)
        value = call("sum", product, axis=(axis + 1,), keepdims=False)
    if taps.outside is None or not taps.outside.any():
        return value
    mask = const(taps.outside.reshape(out, *(1,) * (len(shape) - axis - 1)))
    return call("where", mask, const(np.array(extrapolation, dtype)), value)


def resize(
    node: OnnxNode,
    options: Options,
    scales: list[float],
    sizes: list[int],
    roi: list[tuple[float, float]],
    extrapolation: float = 0.0,
) -> Value:
    """Input 0 resized per axis to `sizes` with `scales` (1 and the same size: untouched)."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    if options.mode != "nearest" and not dtype.startswith(("float", "bfloat")):
        raise node.error(
            f"{options.mode} interpolation of {dtype} tensors is not supported",
            hint="cast to float32 first",
        )
    data, current = node.expr(0), list(shape)
    for axis, (extent, out) in enumerate(zip(shape, sizes, strict=True)):
        identity = math.isclose(scales[axis], 1.0) and out == extent and roi[axis] == (0.0, 1.0)
        if identity:
            continue
        if out < 1 or extent < 1:
            raise node.error(
                f"axis {axis} resizes {extent} to {out} elements; Tessel resizes "
                "non-empty axes to non-empty ones"
            )
        taps = axis_taps(options, extent, out, scales[axis], roi[axis])
        data = apply_taps(data, tuple(current), dtype, axis, taps, extrapolation)
        current[axis] = out
    return Value(data, TensorType(tuple(current), dtype))
