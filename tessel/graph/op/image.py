"""image.resize2d: resizing the H and W axes (nearest, linear, cubic), with the coordinate
transformations TOPI implements; image.grid_sample comes from grid.py, image.roi_align from
roi_align.py."""

from __future__ import annotations

import numpy as np

from tessel import topi
from tessel.graph.op import grid, roi_align
from tessel.graph.op.common import as_dtype, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type

_METHODS = ("nearest_neighbor", "linear", "cubic")
_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
_ROUNDING = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
_EPS = np.float32(1e-5)


def _resize_rel(args: Args, attrs: Attrs) -> Type:
    if attrs.layout not in ("NCHW", "NHWC"):
        raise args.error("layout", f"must be 'NCHW' or 'NHWC', got {attrs.layout!r}")
    data = args.tensor("data", ndim=4)
    choices = (
        ("method", _METHODS),
        ("coordinate_transformation_mode", _MODES),
        ("rounding_method", _ROUNDING),
    )
    for name, allowed in choices:
        if attrs[name] not in allowed:
            raise args.error(name, f"must be one of {list(allowed)}, got {attrs[name]!r}")
    if len(attrs.size) != 2 or min(attrs.size) < 1:
        raise args.error(
            "size", f"must be two positive integers (height, width), got {list(attrs.size)}"
        )
    if attrs.coordinate_transformation_mode == "tf_crop_and_resize" and len(attrs.roi) != 4:
        raise args.error(
            "roi", f"must hold 4 numbers for tf_crop_and_resize, got {list(attrs.roi)}"
        )
    shape = list(data.shape)
    shape[attrs.layout.index("H")], shape[attrs.layout.index("W")] = attrs.size
    return same_as(data, shape, attrs.out_dtype or None)


def _resize_lower(data, *, attrs: Attrs):
    return topi.image.resize2d(
        data,
        attrs.roi,
        attrs.size,
        attrs.layout,
        attrs.method,
        attrs.coordinate_transformation_mode,
        attrs.rounding_method,
        attrs.cubic_alpha,
        attrs.cubic_exclude,
        attrs.extrapolation_value,
        attrs.out_dtype or None,
    )


def _affine(mode: str, extent: int, out: int, roi: tuple[float, float]) -> tuple[float, float]:
    """(a, b): output index o samples input coordinate a * o + b."""
    if mode in ("align_corners", "pytorch_half_pixel", "tf_crop_and_resize") and out == 1:
        return 0.0, (
            0.5 * (roi[0] + roi[1]) * (extent - 1) if mode == "tf_crop_and_resize" else 0.0
        )
    scale = extent / out
    table = {
        "align_corners": ((extent - 1) / max(out - 1, 1), 0.0),
        "asymmetric": (scale, 0.0),
        "tf_half_pixel_for_nn": (scale, 0.5 * scale),
        "tf_crop_and_resize": (
            (roi[1] - roi[0]) * (extent - 1) / max(out - 1, 1),
            roi[0] * (extent - 1),
        ),
    }
    return table.get(mode, (scale, 0.5 * scale - 0.5))


def _nearest(coordinate: np.ndarray, rounding: str) -> np.ndarray:
    half = np.float32(0.5) + _EPS
    rounded = {
        "round": lambda c: np.round(c),
        "floor": lambda c: np.floor(c + _EPS),
        "ceil": lambda c: np.ceil(c - _EPS),
        "round_prefer_floor": lambda c: np.ceil(c - half),
        "round_prefer_ceil": lambda c: np.floor(c + half),
    }[rounding](coordinate)
    return rounded.astype(np.int64)


def _cubic_weights(t: np.ndarray, alpha: float) -> list[np.ndarray]:
    a = np.float32(alpha)

    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - a * 5) * d + a * 8) * d - a * 4

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coordinate: np.ndarray, extent: int, attrs: Attrs) -> list[tuple[np.ndarray, np.ndarray]]:
    """(input index, weight) per tap of one axis, indices clamped into the input."""
    base = np.floor(coordinate)
    t, first = (coordinate - base).astype(np.float32), base.astype(np.int64)
    if attrs.method == "linear":
        taps = [(first, np.float32(1) - t), (first + 1, t)]
    else:
        taps = list(
            zip(
                first + np.arange(-1, 3)[:, None], _cubic_weights(t, attrs.cubic_alpha), strict=True
            )
        )
    if attrs.method == "cubic" and attrs.cubic_exclude:
        taps = [(i, np.where((i >= 0) & (i < extent), w, np.float32(0))) for i, w in taps]
        total = sum(w for _, w in taps)
        taps = [(i, w / total) for i, w in taps]
    return [(np.clip(i, 0, extent - 1), w) for i, w in taps]


def _resize_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    x = data.transpose(0, 3, 1, 2) if attrs.layout == "NHWC" else data
    mode, rounding = attrs.coordinate_transformation_mode, attrs.rounding_method
    rounding = rounding or ("round" if mode == "align_corners" else "floor")
    roi = tuple(attrs.roi) if len(attrs.roi) == 4 else (0.0, 0.0, 1.0, 1.0)
    coords = []
    for axis, (extent, out) in enumerate(zip(x.shape[2:], attrs.size, strict=True)):
        a, b = _affine(mode, extent, out, (roi[axis], roi[axis + 2]))
        coords.append(np.arange(out).astype(np.float32) * np.float32(a) + np.float32(b))
    (h, w), (cy, cx) = x.shape[2:], coords
    if attrs.method == "nearest_neighbor":
        iy, ix = (
            np.clip(_nearest(cy, rounding), 0, h - 1),
            np.clip(_nearest(cx, rounding), 0, w - 1),
        )
        out = x[:, :, iy[:, None], ix[None, :]]
    else:
        out = _interpolate(x.astype(np.float32), _taps(cy, h, attrs), _taps(cx, w, attrs))
    dtype = attrs.out_dtype or str(data.dtype)
    if not np.issubdtype(np.dtype(dtype), np.floating) and attrs.method != "nearest_neighbor":
        out = np.round(out)
    out = as_dtype(out, dtype)
    if mode == "tf_crop_and_resize":
        outside = ((cy < 0) | (cy > h - 1))[:, None] | ((cx < 0) | (cx > w - 1))[None, :]
        out = np.where(outside, as_dtype(np.asarray(attrs.extrapolation_value), dtype), out)
    return out.transpose(0, 2, 3, 1) if attrs.layout == "NHWC" else out


def _interpolate(x: np.ndarray, ys: list, xs: list) -> np.ndarray:
    total = None
    for iy, wy in ys:
        row = None
        for ix, wx in xs:
            term = x[:, :, iy[:, None], ix[None, :]] * wx[None, :]
            row = term if row is None else row + term
        part = row * wy[:, None]
        total = part if total is None else total + part
    return total


OPERATORS = (
    OpDef(
        "image.resize2d",
        ("data",),
        (
            Attr("size", "ints"),
            Attr("roi", "floats", (0.0, 0.0, 0.0, 0.0)),
            Attr("layout", "str", "NCHW"),
            Attr("method", "str", "linear"),
            Attr("coordinate_transformation_mode", "str", "half_pixel"),
            Attr("rounding_method", "str", ""),
            Attr("cubic_alpha", "float", -0.5),
            Attr("cubic_exclude", "int", 0),
            Attr("extrapolation_value", "float", 0.0),
            Attr("out_dtype", "dtype", ""),
        ),
        _resize_rel,
        _resize_lower,
        _resize_ref,
        OpPattern.INJECTIVE,
        "`data` resized to `size` along H and W.",
    ),
    *grid.OPERATORS,
    *roi_align.OPERATORS,
)

__all__ = ["OPERATORS"]
