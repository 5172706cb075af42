"""RoiAlign as image.roi_align, whose grid of samples per bin is fixed.

With sampling_ratio > 0 every bin has sampling_ratio x sampling_ratio samples. With 0 (adaptive)
a region has ceil(region extent / output extent) samples per axis, which depends on the regions'
values: known at import, the regions are grouped by their grids, one image.roi_align per group;
computed at run time, they are refused (the sample count would have no static bound).
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.errors import ValueNeededError
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.graph.expr import Expr

_MODES = ("avg", "max")
_TRANSFORMS = ("half_pixel", "output_half_pixel")


def _half_pixel(node: OnnxNode) -> bool:
    """coordinate_transformation_mode (16+, half_pixel by default); before 16 regions are not
    shifted (output_half_pixel)."""
    if node.opset < 16:
        return False
    mode = node.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in _TRANSFORMS:
        raise node.error(
            f"coordinate_transformation_mode {mode!r} is not one of {list(_TRANSFORMS)}"
        )
    return mode == "half_pixel"


def _adaptive_grids(
    node: OnnxNode, rois: np.ndarray, pooled: tuple[int, int], half_pixel: bool
) -> np.ndarray:
    """[R, 2]: each region's samples per bin (h, w) with sampling_ratio 0, computed in the rois'
    dtype as onnxruntime does: ceil(region extent / output extent)."""
    dtype = rois.dtype.type
    scale, offset = dtype(node.attr("spatial_scale", 1.0)), dtype(0.5 if half_pixel else 0.0)
    start, end = rois[:, :2] * scale - offset, rois[:, 2:] * scale - offset
    size = end - start
    if not half_pixel:
        size = np.maximum(size, dtype(1.0))
    bins = np.array([pooled[1], pooled[0]], dtype=dtype)  # the rois hold (x, y) pairs
    with np.errstate(invalid="ignore"):
        grids = np.ceil(size / bins)[:, ::-1]  # (h, w)
    if not np.isfinite(grids).all():
        raise node.error("a region of interest is not finite")
    return grids.astype(np.int64)


def _grouped(node: OnnxNode, attrs: dict, pooled: tuple[int, int]) -> Expr:
    """Adaptive sampling over regions known at import: one image.roi_align per distinct grid,
    the results put back in the regions' order. A grid with no samples (a region of negative
    extent, half_pixel) pools to 0, as in the reference."""
    try:
        rois = node.static(1, "rois")
    except ValueNeededError as err:
        # The backend binds such inputs and imports again; a compiled model cannot.
        raise ValueNeededError(
            f"{err.message} (sampling_ratio=0 sizes each region's grid of samples from its values)",
            err.inputs,
            rule=f"onnx.{node.op_type}",
            hint="set sampling_ratio > 0 (a fixed grid of samples), or make rois an initializer",
        ) from err
    grids = _adaptive_grids(node, rois, pooled, attrs["half_pixel"])
    shape, dtype = node.shape(0), node.out_type().dtype
    parts, order = [], []
    for grid in np.unique(grids, axis=0):
        members = np.flatnonzero((grids == grid).all(axis=1))
        if min(grid) < 1:
            part: Expr = const(np.zeros((len(members), shape[1], *pooled), dtype))
        else:
            indices = call("take", node.expr(2), const(members), axis=0)
            part = call(
                "image.roi_align",
                node.expr(0),
                const(rois[members]),
                indices,
                samples=tuple(int(g) for g in grid),
                **attrs,
            )
        parts.append(part)
        order.extend(members)
    if len(parts) == 1:
        return parts[0]
    joined = call("concatenate", tuple_of(parts), axis=0)
    return call("take", joined, const(np.argsort(order)), axis=0)


def convert_roi_align(node: OnnxNode) -> Expr:
    """RoiAlign (10; coordinate_transformation_mode from 16) as image.roi_align."""
    shape, rois = node.shape(0), node.shape(1)
    if len(shape) != 4:
        raise node.error(f"X must be 4-D (N, C, H, W), got shape {list(shape)}")
    if len(rois) != 2 or rois[1] != 4 or node.shape(2) != rois[:1]:
        raise node.error(
            f"rois {list(rois)} and batch_indices {list(node.shape(2))} must be (R, 4) and (R,)"
        )
    mode = node.attr("mode", "avg")
    if mode not in _MODES:
        raise node.error(f"mode {mode!r} is not one of {list(_MODES)}")
    pooled = (int(node.attr("output_height", 1)), int(node.attr("output_width", 1)))
    ratio = int(node.attr("sampling_ratio", 0))
    if min(pooled) < 1 or ratio < 0:
        raise node.error(
            f"output_height/output_width {list(pooled)} must be positive and "
            f"sampling_ratio {ratio} not negative"
        )
    attrs = dict(
        pooled_size=pooled,
        spatial_scale=float(node.attr("spatial_scale", 1.0)),
        mode=mode,
        half_pixel=_half_pixel(node),
    )
    if ratio == 0:
        return _grouped(node, attrs, pooled)
    return call(
        "image.roi_align", node.expr(0), node.expr(1), node.expr(2), samples=(ratio, ratio), **attrs
    )


TABLE: dict[str, tuple[Entry, ...]] = {
    # coordinate_transformation_mode from 16 (half_pixel by default); 22 adds bfloat16
    "RoiAlign": every_opset(convert_roi_align, first=10),
}
