"""Image operators: Resize, Upsample (resize.py), GridSample, AffineGrid (grid.py),
DepthToSpace/SpaceToDepth, Col2Im, CenterCropPad (layout.py)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.resize import (
    COORDINATE_MODES,
    MODES,
    NEAREST_MODES,
    Options,
    resize,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.values import Value


def _options(node: OnnxNode) -> Options:
    """Resize's attributes, checked (opset 10: asymmetric coordinates, onnxruntime's rounding)."""
    mode = node.attr("mode", "nearest")
    if node.opset < 11 or node.op_type == "Upsample":
        coordinates, nearest = "asymmetric", "simple"
        mode = "linear" if mode == "bilinear" else mode
    else:
        coordinates = node.attr("coordinate_transformation_mode", "half_pixel")
        nearest = node.attr("nearest_mode", "round_prefer_floor")
    checks = (("mode", mode, MODES), ("coordinate_transformation_mode", coordinates,
              COORDINATE_MODES), ("nearest_mode", nearest, NEAREST_MODES))  # fmt: skip
    for name, value, allowed in checks:
        if value not in allowed:
            raise node.error(f"{name} {value!r} is not one of {list(allowed)}")
    if coordinates == "half_pixel_symmetric" and node.opset < 19:
        raise node.error("half_pixel_symmetric needs opset 19")
    antialias = bool(node.attr("antialias", 0))
    if antialias and mode == "nearest":
        raise node.error("antialias applies to linear and cubic modes only")
    return Options(
        mode,
        coordinates,
        nearest,
        float(node.attr("cubic_coeff_a", -0.75)),
        bool(node.attr("exclude_outside", 0)),
        antialias,
    )


def _axes(node: OnnxNode, rank: int) -> list[int]:
    given = node.attr("axes")
    if given is None:
        return list(range(rank))
    axes = [node.axis(int(a), rank) for a in given]
    if len(set(axes)) != len(axes):
        raise node.error(f"axes {list(given)} repeat an axis")
    return axes


def _given(node: OnnxNode, index: int, what: str) -> np.ndarray | None:
    """An optional input's value; None when omitted or empty."""
    if not node.has_input(index):
        return None
    value = node.static(index, what)
    return value if value.size else None


def _sizes_and_scales(
    node: OnnxNode, axes: list[int], scales_at: int, sizes_at: int
) -> tuple[list[float], list[int]]:
    """Per axis of the input: the scale and the output extent, from scales or sizes (with
    keep_aspect_ratio_policy), as ONNX's reference computes them."""
    shape = node.shape(0)
    scales_given = _given(node, scales_at, "scales") if scales_at >= 0 else None
    sizes_given = _given(node, sizes_at, "sizes") if sizes_at >= 0 else None
    if (scales_given is None) == (sizes_given is None):
        raise node.error("exactly one of scales and sizes must be given")
    given = scales_given if scales_given is not None else sizes_given
    if len(given) != len(axes):
        raise node.error(f"{len(given)} scales or sizes for {len(axes)} axes")
    scales, sizes = [1.0] * len(shape), list(shape)
    if scales_given is not None:
        for axis, scale in zip(axes, scales_given.tolist(), strict=True):
            if scale <= 0:
                raise node.error(f"scale {scale} of axis {axis} must be positive")
            scales[axis], sizes[axis] = float(scale), int(scale * shape[axis])
        return scales, sizes
    for axis, size in zip(axes, sizes_given.tolist(), strict=True):
        scales[axis], sizes[axis] = int(size) / shape[axis], int(size)
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return scales, sizes
    if policy not in ("not_larger", "not_smaller"):
        raise node.error(f"keep_aspect_ratio_policy {policy!r} is not known")
    picked = [scales[a] for a in axes]
    scale = min(picked) if policy == "not_larger" else max(picked)
    for axis in axes:
        scales[axis], sizes[axis] = scale, int(scale * shape[axis] + 0.5)
    return scales, sizes


def _roi(node: OnnxNode, axes: list[int], rank: int) -> list[tuple[float, float]]:
    """(start, end) per axis of tf_crop_and_resize's region of interest ((0, 1) elsewhere)."""
    roi = [(0.0, 1.0)] * rank
    given = _given(node, 1, "roi") if node.opset >= 11 else None
    if given is None or node.attr("coordinate_transformation_mode") != "tf_crop_and_resize":
        return roi
    values = given.astype(np.float64).tolist()
    if len(values) != 2 * len(axes):
        raise node.error(f"roi has {len(values)} values for {len(axes)} axes")
    for i, axis in enumerate(axes):
        roi[axis] = (values[i], values[len(axes) + i])
    return roi


def convert_resize(node: OnnxNode) -> Value:
    """Resize: scales or sizes known at import, every mode of opsets 10-19 (resize.py)."""
    options, rank = _options(node), len(node.shape(0))
    axes = _axes(node, rank) if node.opset >= 18 else list(range(rank))
    if node.opset < 11:
        scales, sizes = _sizes_and_scales(node, axes, 1, -1)
    else:
        scales, sizes = _sizes_and_scales(node, axes, 2, 3)
    extrapolation = float(node.attr("extrapolation_value", 0.0))
    return resize(node, options, scales, sizes, _roi(node, axes, rank), extrapolation)


def convert_upsample(node: OnnxNode) -> Value:
    """Upsample (opsets 7-9): Resize with asymmetric coordinates; scales an attribute until 9."""
    options, rank = _options(node), len(node.shape(0))
    if node.opset >= 9:
        given = node.static(1, "scales").astype(np.float64).tolist()
    else:
        given = list(node.attr("scales", []))
    if len(given) != rank or min(given) < 1:
        raise node.error(f"scales {given} must give each of the {rank} axes a scale >= 1")
    sizes = [int(s * d) for s, d in zip(given, node.shape(0), strict=True)]
    return resize(node, options, [float(s) for s in given], sizes, [(0.0, 1.0)] * rank)


TABLE: dict[str, tuple[Entry, ...]] = {
    "Resize": every_opset(convert_resize, first=10),
    "Upsample": every_opset(convert_upsample, last=9),
}
