"""Resizing the H and W axes of an image tensor (TVM's topi.image.resize2d): nearest-neighbour,
bilinear and bicubic interpolation under ONNX's coordinate transformation modes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import FloatImm, IntImm, PrimExpr
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.te.tensor import Tensor
from tessel.topi.nn.pooling import const_extent, spatial_axes
from tessel.topi.utils import expect_tensor, get_const_int, op_error

OP = "resize2d"
METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)  # fmt: skip
ROUNDING_METHODS = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")

# Input coordinates are computed in float32, as TVM does, whatever the data's dtype.
COORD_DTYPE = "float32"
EPSILON = 1e-5


def _affine_map(mode: str, extent: int, out: int, roi: tuple[float, float]) -> tuple[float, float]:
    """(a, b) with input coordinate = a * output index + b, computed exactly in double."""
    scale = extent / out
    if mode in ("align_corners", "pytorch_half_pixel", "tf_crop_and_resize") and out == 1:
        return 0.0, (
            0.5 * (roi[0] + roi[1]) * (extent - 1) if mode == "tf_crop_and_resize" else 0.0
        )
    if mode == "align_corners":
        return (extent - 1) / (out - 1), 0.0
    if mode == "asymmetric":
        return scale, 0.0
    if mode == "tf_half_pixel_for_nn":
        return scale, 0.5 * scale
    if mode == "tf_crop_and_resize":
        return (roi[1] - roi[0]) * (extent - 1) / (out - 1), roi[0] * (extent - 1)
    return scale, 0.5 * scale - 0.5  # half_pixel and pytorch_half_pixel


@dataclass(frozen=True)
class _Axis:
    """One resized axis: output index `o` samples the input at `a * o + b`."""

    extent: int
    a: float
    b: float

    def source(self, o: PrimExpr) -> PrimExpr:
        return te.cast(o, COORD_DTYPE) * te.const(self.a, COORD_DTYPE) + te.const(
            self.b, COORD_DTYPE
        )

    def clamp(self, index: PrimExpr) -> PrimExpr:
        """`index` moved into [0, extent): edge pixels repeat beyond the border."""
        return builders.min_value(
            builders.max_value(index, builders.const(0)), builders.const(self.extent - 1)
        )

    def inside(self, index: PrimExpr) -> PrimExpr:
        return (index >= 0) & (index < self.extent)

    def outside(self, coordinate: PrimExpr) -> PrimExpr:
        """True where a coordinate lies outside [0, extent - 1]."""
        return (coordinate < te.const(0.0, COORD_DTYPE)) | (
            coordinate > te.const(float(self.extent - 1), COORD_DTYPE)
        )


def _nearest_index(coordinate: PrimExpr, rounding_method: str) -> PrimExpr:
    """The input index nearest `coordinate` under `rounding_method`, as int32 (not yet clamped)."""
    # A coordinate that is exactly an integer (or a half, for the round_prefer_* methods) in exact
    # arithmetic may come out one float32 ulp off; as TVM does, nudge it by EPSILON towards the
    # side that exact arithmetic would round to.
    up, nudge = te.const(0.5 + EPSILON, COORD_DTYPE), te.const(EPSILON, COORD_DTYPE)
    rounded = {
        "round": lambda: te.round(coordinate),  # halfway cases to even, as NumPy
        "floor": lambda: te.floor(coordinate + nudge),
        "ceil": lambda: te.ceil(coordinate - nudge),
        "round_prefer_floor": lambda: te.ceil(coordinate - up),
        "round_prefer_ceil": lambda: te.floor(coordinate + up),
    }[rounding_method]()
    return te.cast(rounded, "int32")


def _cubic_weights(t: PrimExpr, alpha: float) -> list[PrimExpr]:
    """Keys' cubic weights of the taps at offsets -1, 0, 1, 2 from floor(x); t = x - floor(x)."""
    a = te.const(alpha, COORD_DTYPE)
    one, two = te.const(1.0, COORD_DTYPE), te.const(2.0, COORD_DTYPE)

    def near(d: PrimExpr) -> PrimExpr:  # |d| <= 1
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0

    def far(d: PrimExpr) -> PrimExpr:  # 1 < |d| < 2
        return ((a * d - a * 5.0) * d + a * 8.0) * d - a * 4.0

    return [far(t + one), near(t), near(one - t), far(two - t)]


def _taps(
    axis: _Axis, coordinate: PrimExpr, method: str, alpha: float
) -> list[tuple[PrimExpr, PrimExpr]]:
    """(unclamped input index, weight) for each tap of the interpolation along one axis."""
    base = te.floor(coordinate)
    t, first = coordinate - base, te.cast(base, "int32")
    if method == "linear":
        return [(first, te.const(1.0, COORD_DTYPE) - t), (first + 1, t)]
    return [
        (first + offset, w)
        for offset, w in zip((-1, 0, 1, 2), _cubic_weights(t, alpha), strict=True)
    ]


def _excluded(
    axis: _Axis, taps: list[tuple[PrimExpr, PrimExpr]]
) -> list[tuple[PrimExpr, PrimExpr]]:
    """Taps outside the input get weight zero; the others are scaled to sum to one."""
    zero = te.const(0.0, COORD_DTYPE)
    masked = [(index, te.select(axis.inside(index), weight, zero)) for index, weight in taps]
    total = masked[0][1]
    for _, weight in masked[1:]:
        total = total + weight
    return [(index, weight / total) for index, weight in masked]


def _const_tuple(argument: str, value: Any, length: int) -> tuple[int, ...]:
    items = list(value) if isinstance(value, list | tuple) else [value]
    try:
        result = tuple(get_const_int(v) for v in items if not isinstance(v, bool))
    except (TypeError, UserError) as err:
        raise op_error(OP, argument, f"expected {length} constant integers, got {value!r}") from err
    if len(result) != length or any(v < 1 for v in result):
        raise op_error(OP, argument, f"expected {length} positive integers, got {value!r}")
    return result


def _roi(roi: Any, mode: str) -> tuple[float, float, float, float]:
    """The region of interest (start_h, start_w, end_h, end_w), read only by tf_crop_and_resize."""
    if mode != "tf_crop_and_resize":
        return (0.0, 0.0, 1.0, 1.0)
    items = list(roi) if isinstance(roi, list | tuple) else []
    values = [v.value if isinstance(v, FloatImm | IntImm) else v for v in items]
    if len(values) != 4 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    ):
        raise op_error(
            OP,
            "roi",
            f"tf_crop_and_resize needs 4 constant numbers "
            f"(start_h, start_w, end_h, end_w), got {roi!r}",
        )
    return tuple(float(v) for v in values)  # type: ignore[return-value]  # checked 4 values above


def _check_choices(method: str, mode: str, rounding_method: str) -> str:
    """Check the string attributes; returns the rounding method, defaulted as TVM defaults it."""
    if method not in METHODS:
        raise op_error(
            OP, "method", f"{method!r} is not a resize method; expected one of {list(METHODS)}"
        )
    if mode not in COORDINATE_MODES:
        raise op_error(
            OP,
            "coordinate_transformation_mode",
            f"{mode!r} is not supported; expected one of {list(COORDINATE_MODES)}",
        )
    if rounding_method == "":
        return "round" if mode == "align_corners" else "floor"
    if rounding_method not in ROUNDING_METHODS:
        raise op_error(
            OP,
            "rounding_method",
            f"{rounding_method!r} is not supported; expected one of {list(ROUNDING_METHODS)}",
        )
    return rounding_method


def _cast_output(value: PrimExpr, dtype: str, method: str) -> PrimExpr:
    """`value` in the output dtype; interpolated values round to the nearest integer first."""
    if (
        DataType.of(dtype).is_float
        or method == "nearest_neighbor"
        or value.dtype == DataType.of(dtype)
    ):
        return te.cast(value, dtype)
    return te.cast(te.round(value), dtype)


def _output_const(value: float, dtype: str) -> PrimExpr:
    """`value` as a constant of the output dtype (rounded to the nearest integer for integers)."""
    return te.const(float(value) if DataType.of(dtype).is_float else round(value), dtype)


def resize2d(
    data: Tensor,
    roi: Any,
    size: Any,
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "",
    bicubic_alpha: float = -0.5,
    bicubic_exclude: int = 0,
    extrapolation_value: float = 0.0,
    out_dtype: str | None = None,
    output_shape: Sequence[Any] | None = None,
) -> Tensor:
    """`data` resized to `size` (height, width) along its H and W axes."""
    expect_tensor(OP, "data", data)
    h_axis, w_axis = spatial_axes(OP, layout, data.ndim)
    mode = coordinate_transformation_mode
    rounding_method = _check_choices(method, mode, rounding_method)
    roi_values = _roi(roi, mode)
    extents = [const_extent(OP, data, axis) for axis in (h_axis, w_axis)]
    sizes = _const_tuple("size", size, 2)
    ay, ax = (
        _Axis(extent, *_affine_map(mode, extent, out, (roi_values[i], roi_values[i + 2])))
        for i, (extent, out) in enumerate(zip(extents, sizes, strict=True))
    )
    if output_shape is None:
        output_shape = list(data.shape)
        output_shape[h_axis], output_shape[w_axis] = sizes
    dtype = out_dtype or data.dtype

    def load(index: Sequence[PrimExpr], y: PrimExpr, x: PrimExpr) -> PrimExpr:
        position = list(index)
        position[h_axis], position[w_axis] = y, x
        return data[tuple(position)]

    def fresize(*index: PrimExpr) -> PrimExpr:
        sy, sx = ay.source(index[h_axis]), ax.source(index[w_axis])
        if method == "nearest_neighbor":
            value = load(
                index,
                ay.clamp(_nearest_index(sy, rounding_method)),
                ax.clamp(_nearest_index(sx, rounding_method)),
            )
        else:
            value = _interpolate(
                lambda y, x: load(index, y, x),
                (ay, ax),
                (sy, sx),
                method,
                bicubic_alpha,
                bool(bicubic_exclude),
            )
        value = _cast_output(value, dtype, method)
        if mode != "tf_crop_and_resize":
            return value
        return te.if_then_else(
            ay.outside(sy) | ax.outside(sx), _output_const(extrapolation_value, dtype), value
        )

    return te.compute(output_shape, fresize, name="resize", tag="resize")


def _interpolate(
    load: Callable[[PrimExpr, PrimExpr], PrimExpr],
    axes: tuple[_Axis, _Axis],
    coordinates: tuple[PrimExpr, PrimExpr],
    method: str,
    alpha: float,
    exclude: bool,
) -> PrimExpr:
    """The weighted sum of the input around (y, x): 2x2 taps for linear, 4x4 for cubic."""
    taps = [_taps(axis, c, method, alpha) for axis, c in zip(axes, coordinates, strict=True)]
    if exclude:
        taps = [_excluded(axis, t) for axis, t in zip(axes, taps, strict=True)]
    ys, xs = taps
    compute_dtype = COORD_DTYPE
    total: PrimExpr | None = None
    for y, wy in ys:
        row: PrimExpr | None = None
        for x, wx in xs:
            term = te.cast(load(axes[0].clamp(y), axes[1].clamp(x)), compute_dtype) * wx
            row = term if row is None else row + term
        total = row * wy if total is None else total + row * wy
    assert total is not None
    return total


__all__ = ["COORDINATE_MODES", "METHODS", "ROUNDING_METHODS", "resize2d"]
