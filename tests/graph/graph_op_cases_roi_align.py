"""Cases (graph_op_cases.Case) for image.roi_align (tessel/graph/op/roi_align.py): regions that
reach beyond the feature map, batch indices of the images there are."""

from __future__ import annotations

from graph_op_cases import Case, T, random_value

from tessel.graph import TensorType


def _regions(rng, types):
    """Data random; corners anywhere around the map (some beyond it, some reversed)."""
    data, rois, indices = types
    extent = max(data.shape[2:])
    corners = rng.uniform(-2, extent + 2, rois.shape).astype(rois.dtype)
    images = rng.integers(0, data.shape[0], indices.shape).astype(indices.dtype)
    return [random_value(data, rng), corners, images]


def roi_align_cases() -> list[Case]:
    """Average pooling with half_pixel, max pooling without, on float32 and float64."""
    index = TensorType((3,), "int64")
    return [
        Case(
            "image.roi_align",
            (T(2, 3, 6, 7), T(3, 4), index),
            {"pooled_size": (2, 3), "samples": (2, 2), "spatial_scale": 0.5},
            T(3, 3, 2, 3),
            (
                (
                    T(1, 2, 5, 4, dtype="float64"),
                    T(4, 4, dtype="float64"),
                    TensorType((4,), "int32"),
                ),
                {"pooled_size": (3, 1), "samples": (1, 3), "mode": "max", "half_pixel": False},
            ),
            ((T(2, 3, 6, 7), T(3, 5), index), {"pooled_size": (2, 2), "samples": (1, 1)}, "rois"),
            _regions,
            tolerance=1e-4,
        ),
        Case(
            "image.roi_align",
            (T(1, 2, 4, 5), T(3, 4), index),
            {"pooled_size": (2, 2), "samples": (3, 2), "mode": "max"},
            T(3, 2, 2, 2),
            (
                (T(2, 1, 3, 3), T(2, 4), TensorType((2,), "int64")),
                {"pooled_size": (1, 4), "samples": (2, 1), "half_pixel": False},
            ),
            (
                (T(1, 2, 4, 5), T(3, 4), index),
                {"pooled_size": (2, 2), "samples": (0, 2)},
                "samples",
            ),
            _regions,
            tolerance=1e-4,
            id="image.roi_align-max",
        ),
    ]
