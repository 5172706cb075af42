"""Sampling grids: GridSample (image.grid_sample) and AffineGrid (a batched product of theta with
a constant grid of homogeneous base coordinates)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType

# Opset 16's names of the modes that opset 20 renamed.
_MODE_NAMES = {"bilinear": "linear", "bicubic": "cubic"}


def convert_grid_sample(node: OnnxNode) -> Expr:
    """GridSample (opset 16: 4-D; from 20: N-D): image.grid_sample."""
    mode = node.attr("mode", "bilinear" if node.opset < 20 else "linear")
    mode = _MODE_NAMES.get(mode, mode)
    padding_mode = node.attr("padding_mode", "zeros")
    if mode not in ("nearest", "linear", "cubic"):
        raise node.error(f"mode {mode!r} is not nearest, (bi)linear or (bi)cubic")
    if mode == "cubic" and len(node.shape(0)) != 4:
        raise node.error("cubic sampling is defined for 4-D inputs only")
    align_corners = bool(node.attr("align_corners", 0))
    return call(
        "image.grid_sample",
        node.expr(0),
        node.expr(1),
        mode=mode,
        padding_mode=padding_mode,
        align_corners=align_corners,
    )


def _base_coordinates(extent: int, align_corners: bool) -> np.ndarray:
    """The normalised coordinates of an axis' positions: pixel centres, or corners aligned."""
    i = np.arange(extent, dtype=np.float64)
    if align_corners:
        return np.full(1, -1.0) if extent == 1 else -1 + 2 * i / (extent - 1)
    return (2 * i + 1) / extent - 1


def convert_affine_grid(node: OnnxNode) -> Value:
    """AffineGrid: theta (N, r, r + 1) applied to every position's (x, y[, z], 1)."""
    theta_shape, dtype = node.shape(0), node.input(0).type.dtype
    size = [int(v) for v in node.static(1, "size")]
    rank = len(size) - 2
    if rank not in (2, 3) or theta_shape[1:] != (rank, rank + 1) or theta_shape[0] != size[0]:
        raise node.error(
            f"theta {list(theta_shape)} and size {size} do not describe a 2-D or 3-D affine grid"
        )
    align = bool(node.attr("align_corners", 0))
    axes = np.meshgrid(*(_base_coordinates(e, align) for e in size[2:]), indexing="ij")
    # Homogeneous coordinates innermost axis first: (x, y[, z], 1).
    base = np.stack([*axes[::-1], np.ones(axes[0].shape)], axis=-1).reshape(1, -1, rank + 1)
    grid = call("nn.batch_matmul", const(base, dtype), node.expr(0), transpose_b=True)
    shape = (size[0], *size[2:], rank)
    return Value(call("reshape", grid, newshape=shape), TensorType(shape, dtype))


# Joined into the family's TABLE (conv_pool.py or image.py), not a table of its own.
TABLE: dict[str, tuple[Entry, ...]] = {
    "GridSample": every_opset(convert_grid_sample, first=16),
    "AffineGrid": every_opset(convert_affine_grid, first=20),
}
