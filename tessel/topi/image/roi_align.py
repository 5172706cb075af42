"""RoiAlign (Mask R-CNN's, ONNX's): each output bin of a region of interest pools a fixed grid of
bilinear samples of the feature map, by their average or by the largest of their weighted
corners (onnx/reference/ops/op_roi_align.py and onnxruntime's kernel, whose formulas, order of
operations included, are followed here).

A region's corners (x1, y1, x2, y2) scale by spatial_scale (less 0.5 with half_pixel); without
half_pixel a region is at least 1 x 1. Its bins split it evenly, and each bin holds samples_h x
samples_w samples at the centres of an even split of the bin. A sample beyond [-1, extent] along
either axis counts 0; inside, its position is clamped to [0, extent - 1] before the bilinear
weights are taken.
"""

from __future__ import annotations

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.utils import get_const_tuple, op_error

OP = "roi_align"
MODES = ("avg", "max")


def _axis_taps(
    rois: Tensor,
    first: int,
    bins: int,
    samples: int,
    extent: int,
    spatial_scale: float,
    half_pixel: bool,
    name: str,
) -> list[Tensor]:
    """[rois, bins, samples] each: the low and high index of every sample along one axis and
    their bilinear weights (0 for a sample beyond [-1, extent]), from the region's corners
    rois[:, first] and rois[:, first + 2], computed as the reference does (same order). One
    block of four outputs: the default schedule keeps it as its own nest (it inlines only
    single-output blocks), so the taps are computed once per sample, not once per channel."""
    dtype = rois.dtype

    def c(value: float) -> PrimExpr:
        return te.const(value, dtype)

    def ftaps(r: PrimExpr, p: PrimExpr, i: PrimExpr) -> list[PrimExpr]:
        offset = c(0.5 if half_pixel else 0.0)
        start = rois[r, first] * c(spatial_scale) - offset
        size = rois[r, first + 2] * c(spatial_scale) - offset - start
        if not half_pixel:
            size = builders.max_value(size, c(1.0))  # a malformed region is 1 x 1
        step = size / c(float(bins))
        position = (
            start
            + te.cast(p, dtype) * step
            + (te.cast(i, dtype) + c(0.5)) * step / c(float(samples))
        )
        inside = (position >= c(-1.0)) & (position <= c(float(extent)))
        # Clamped into the map; its floor is the low index and the rest the high one's weight.
        clamped = builders.min_value(builders.max_value(position, c(0.0)), c(float(extent - 1)))
        base = te.floor(clamped)
        last = builders.const(extent - 1, "int64")
        # Clamped as integers too, so that a NaN position (whose cast is undefined) reads in
        # bounds.
        low = builders.min_value(
            builders.max_value(te.cast(base, "int64"), builders.const(0, "int64")), last
        )
        frac = clamped - base
        return [
            low,
            builders.min_value(low + 1, last),
            te.select(inside, c(1.0) - frac, c(0.0)),
            te.select(inside, frac, c(0.0)),
        ]

    return te.compute((rois.shape[0], bins, samples), ftaps, name=f"{OP}_{name}")


def roi_align(
    data: Tensor,
    rois: Tensor,
    batch_indices: Tensor,
    pooled_size: tuple[int, int],
    spatial_scale: float,
    samples: tuple[int, int],
    mode: str = "avg",
    half_pixel: bool = True,
) -> Tensor:
    """data (N, C, H, W) pooled over rois (R, 4) of images batch_indices (R): (R, C, *pooled)."""
    shape = get_const_tuple(data.shape)
    if len(shape) != 4:
        raise op_error(OP, "data", f"must be 4-D (N, C, H, W), got shape {list(shape)}")
    rois_shape, count = get_const_tuple(rois.shape), get_const_tuple(batch_indices.shape)
    if len(rois_shape) != 2 or rois_shape[1] != 4 or count != rois_shape[:1]:
        raise op_error(
            OP,
            "rois",
            f"of shape {list(rois_shape)} with batch_indices of shape "
            f"{list(count)}: (R, 4) and (R,) wanted",
        )
    if mode not in MODES:
        raise op_error(OP, "mode", f"{mode!r} is not one of {list(MODES)}")
    if min(samples) < 1 or min(pooled_size) < 1:
        raise op_error(
            OP, "samples", f"{list(samples)} and pooled size {list(pooled_size)} must be positive"
        )
    n, channels, height, width = shape
    (out_h, out_w), (grid_h, grid_w), dtype = pooled_size, samples, data.dtype
    y0, y1, wy0, wy1 = _axis_taps(rois, 1, out_h, grid_h, height, spatial_scale, half_pixel, "y")
    x0, x1, wx0, wx1 = _axis_taps(rois, 0, out_w, grid_w, width, spatial_scale, half_pixel, "x")
    iy = te.reduce_axis((0, grid_h), name="iy")
    ix = te.reduce_axis((0, grid_w), name="ix")

    def fpool(r: PrimExpr, c: PrimExpr, ph: PrimExpr, pw: PrimExpr) -> PrimExpr:
        image = builders.min_value(
            builders.max_value(te.cast(batch_indices[r], "int64"), builders.const(0, "int64")),
            builders.const(n - 1, "int64"),
        )  # onnxruntime refuses an index out of range; clamped, it reads in bounds
        y, x = (r, ph, iy), (r, pw, ix)
        corners = (
            (wy0[y] * wx0[x]) * data[image, c, y0[y], x0[x]],
            (wy0[y] * wx1[x]) * data[image, c, y0[y], x1[x]],
            (wy1[y] * wx0[x]) * data[image, c, y1[y], x0[x]],
            (wy1[y] * wx1[x]) * data[image, c, y1[y], x1[x]],
        )
        if mode == "avg":
            return te.sum(((corners[0] + corners[1]) + corners[2]) + corners[3], axis=[iy, ix])
        # onnxruntime's max mode: the largest weighted corner (a sample outside counts 0)
        largest = builders.max_value(
            builders.max_value(corners[0], corners[1]), builders.max_value(corners[2], corners[3])
        )
        return te.max(largest, axis=[iy, ix])

    out_shape = (rois_shape[0], channels, out_h, out_w)
    pooled = te.compute(out_shape, fpool, name=f"{OP}_{mode}", tag=OP)
    if mode == "max":
        return pooled
    scale = te.const(float(grid_h * grid_w), dtype)
    return te.compute(out_shape, lambda *i: pooled[i] / scale, name=OP, tag=OP)


__all__ = ["MODES", "roi_align"]
