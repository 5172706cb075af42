"""image.roi_align: regions of interest of a feature map pooled to a fixed size from bilinear
samples (ONNX's RoiAlign with a fixed number of samples per bin; tessel/topi/image/roi_align.py
says how)."""

from __future__ import annotations

import numpy as np

from tessel import topi
from tessel.graph.op.common import expect_float, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.support.dtype import DataType
from tessel.topi.image.roi_align import MODES


def _roi_align_rel(args: Args, attrs: Attrs) -> Type:
    data = expect_float(args, "data")
    if data.ndim != 4:
        raise args.error("data", f"must be 4-D (N, C, H, W), got shape {list(data.shape)}")
    rois, indices = args.tensor("rois", ndim=2), args.tensor("batch_indices", ndim=1)
    args.same_dtype("rois", "data")
    if rois.shape[1] != 4:
        raise args.error("rois", f"must be (R, 4) boxes (x1, y1, x2, y2), got {list(rois.shape)}")
    if not DataType.of(indices.dtype).is_int or indices.shape[0] != rois.shape[0]:
        raise args.error(
            "batch_indices",
            f"must be {rois.shape[0]} integers (one per region), "
            f"got {indices.dtype} {list(indices.shape)}",
        )
    if attrs.mode not in MODES:
        raise args.error("mode", f"must be one of {list(MODES)}, got {attrs.mode!r}")
    for name in ("pooled_size", "samples"):
        if len(attrs[name]) != 2 or min(attrs[name]) < 1:
            raise args.error(name, f"must be two positive integers (h, w), got {list(attrs[name])}")
    return same_as(data, (rois.shape[0], data.shape[1], *attrs.pooled_size))


def _positions(rois: np.ndarray, first: int, bins: int, samples: int, attrs: Attrs) -> np.ndarray:
    """[R, bins, samples] sample positions along one axis, in the rois' dtype."""
    dtype = rois.dtype.type
    offset = dtype(0.5 if attrs.half_pixel else 0.0)
    start = rois[:, first] * dtype(attrs.spatial_scale) - offset
    size = rois[:, first + 2] * dtype(attrs.spatial_scale) - offset - start
    if not attrs.half_pixel:
        size = np.maximum(size, dtype(1.0))
    step = (size / dtype(bins))[:, None, None]
    sample = (np.arange(samples, dtype=dtype) + dtype(0.5))[None, None, :] * step / dtype(samples)
    return start[:, None, None] + np.arange(bins, dtype=dtype)[None, :, None] * step + sample


def _taps(position: np.ndarray, extent: int) -> tuple[np.ndarray, ...]:
    """(inside, low, high, weight of high) per sample, as the reference clamps them."""
    dtype = position.dtype.type
    inside = (position >= -1) & (position <= extent)
    clamped = np.clip(np.nan_to_num(position), dtype(0), dtype(extent - 1))
    low = np.floor(clamped).astype(np.int64)
    return inside, low, np.minimum(low + 1, extent - 1), clamped - low.astype(dtype)


def _roi_align_ref(
    data: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray, *, attrs: Attrs
) -> np.ndarray:
    n, _, height, width = data.shape
    (out_h, out_w), (grid_h, grid_w) = attrs.pooled_size, attrs.samples
    with np.errstate(all="ignore"):
        in_y, y0, y1, ly = _taps(_positions(rois, 1, out_h, grid_h, attrs), height)
        in_x, x0, x1, lx = _taps(_positions(rois, 0, out_w, grid_w, attrs), width)
        # Axes (R, out_h, grid_h, out_w, grid_w): y's on the first three, x's on the last two.
        y0, y1, ly, in_y = (a[:, :, :, None, None] for a in (y0, y1, ly, in_y))
        x0, x1, lx, in_x = (a[:, None, None, :, :] for a in (x0, x1, lx, in_x))
        image = np.clip(batch_indices, 0, n - 1).astype(np.int64)[:, None, None, None, None]
        one = data.dtype.type(1)

        def corner(y: np.ndarray, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
            # data[image, :, y, x] puts the channels last: (R, out_h, grid_h, out_w, grid_w, C)
            return weight[..., None] * data[image, :, y, x]

        corners = (corner(y0, x0, (one - ly) * (one - lx)), corner(y0, x1, (one - ly) * lx),
                   corner(y1, x0, ly * (one - lx)), corner(y1, x1, ly * lx))  # fmt: skip
        inside = (in_y & in_x)[..., None]
        if attrs.mode == "avg":
            value = np.where(inside, ((corners[0] + corners[1]) + corners[2]) + corners[3], 0)
            pooled = value.sum(axis=(2, 4), dtype=data.dtype) / data.dtype.type(grid_h * grid_w)
        else:
            value = np.where(
                inside,
                np.maximum(np.maximum(corners[0], corners[1]), np.maximum(corners[2], corners[3])),
                0,
            )
            pooled = value.max(axis=(2, 4))
    return np.moveaxis(pooled, -1, 1).astype(data.dtype)


def _roi_align_lower(data, rois, batch_indices, *, attrs: Attrs):
    return topi.image.roi_align(
        data,
        rois,
        batch_indices,
        attrs.pooled_size,
        attrs.spatial_scale,
        attrs.samples,
        attrs.mode,
        attrs.half_pixel,
    )


OPERATORS = (
    OpDef(
        "image.roi_align",
        ("data", "rois", "batch_indices"),
        (
            Attr("pooled_size", "ints"),
            Attr("spatial_scale", "float", 1.0),
            Attr("samples", "ints"),
            Attr("mode", "str", "avg"),
            Attr("half_pixel", "bool", True),
        ),
        _roi_align_rel,
        _roi_align_lower,
        _roi_align_ref,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        "data (N, C, H, W) pooled over rois (R, 4) of images batch_indices (R) into "
        "(R, C, *pooled_size), samples (h, w) bilinear samples per bin, averaged or max.",
    ),
)

__all__ = ["OPERATORS"]
