"""image.grid_sample: an N-D image sampled at the positions a grid gives (ONNX's GridSample)."""

from __future__ import annotations

import itertools

import numpy as np

from tessel import topi
from tessel.graph.op.common import expect_float, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.topi.image.grid_sample import CUBIC_A, MODES, PADDING_MODES


def _grid_sample_rel(args: Args, attrs: Attrs) -> Type:
    data = expect_float(args, "data")
    grid = expect_float(args, "grid")
    rank = data.ndim - 2
    if rank < 1 or grid.shape != (data.shape[0], *grid.shape[1:-1], rank):
        raise args.error(
            "grid",
            f"of shape {list(grid.shape)} does not fit data "
            f"{list(data.shape)}: (N, *out, {rank}) wanted",
        )
    if attrs.mode not in MODES:
        raise args.error("mode", f"must be one of {list(MODES)}, got {attrs.mode!r}")
    if attrs.padding_mode not in PADDING_MODES:
        raise args.error(
            "padding_mode", f"must be one of {list(PADDING_MODES)}, got {attrs.padding_mode!r}"
        )
    return same_as(data, (*data.shape[:2], *grid.shape[1:-1]))


def _reflect(x: np.ndarray, low: float, high: float) -> np.ndarray:
    span = high - low
    if span <= 0:
        return np.full_like(x, low)
    below, above = low - x, x - high
    turns_b, turns_a = np.floor(below / span), np.floor(above / span)
    rest_b, rest_a = below - turns_b * span, above - turns_a * span
    from_below = np.where(turns_b % 2 == 0, low + rest_b, high - rest_b)
    from_above = np.where(turns_a % 2 == 0, high - rest_a, low + rest_a)
    return np.where(x < low, from_below, np.where(x > high, from_above, x))


def _weights(t: np.ndarray, mode: str) -> list[np.ndarray]:
    if mode == "linear":
        return [1 - t, t]
    a = CUBIC_A

    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _axis_taps(g: np.ndarray, extent: int, attrs: Attrs) -> list[tuple[np.ndarray, ...]]:
    """(index, weight, inside) per tap of one axis, for normalised coordinates g."""
    low, high = (0.0, extent - 1.0) if attrs.align_corners else (-0.5, extent - 0.5)
    x = (g + 1) / 2 * (extent - 1) if attrs.align_corners else ((g + 1) * extent - 1) / 2
    x = np.rint(x) if attrs.mode == "nearest" else x
    outside = (x < low) | (x > high)
    if attrs.padding_mode == "border":
        x = np.where(outside, np.clip(x, 0, extent - 1), x)
    elif attrs.padding_mode == "reflection":
        x = np.where(outside, _reflect(x, low, high), x)
    base = np.floor(x)
    if attrs.mode == "nearest":
        positions, weights = [base], [np.ones_like(x)]
    else:
        start = 0 if attrs.mode == "linear" else -1
        weights = _weights(x - base, attrs.mode)
        positions = [base + start + k for k in range(len(weights))]
    taps = []
    for position, weight in zip(positions, weights, strict=True):
        inside = (position >= 0) & (position < extent)
        if attrs.padding_mode == "reflection":
            position = np.trunc(_reflect(position, low, high))
        if attrs.padding_mode != "zeros":
            inside = np.ones_like(inside)
        taps.append((np.clip(position, 0, extent - 1).astype(np.int64), weight, inside))
    return taps


def _grid_sample_ref(data: np.ndarray, grid: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    rank, wide = data.ndim - 2, np.float64
    per_axis = [
        _axis_taps(grid[..., rank - 1 - d].astype(wide), data.shape[2 + d], attrs)
        for d in range(rank)
    ]
    batch = np.arange(data.shape[0]).reshape(-1, *(1,) * (grid.ndim - 2))
    out = np.zeros((*data.shape[:2], *grid.shape[1:-1]), wide)
    for combination in itertools.product(*per_axis):
        index = tuple(tap[0] for tap in combination)
        weight = np.prod([tap[1] for tap in combination], axis=0)
        inside = np.all([tap[2] for tap in combination], axis=0)
        values = data[(batch, slice(None), *index)]  # (N, *out, C): advanced indices first
        values = np.moveaxis(values, -1, 1).astype(wide)
        out += np.where(inside, weight, 0.0)[:, None] * values
    return out.astype(data.dtype)


OPERATORS = (
    OpDef(
        "image.grid_sample",
        ("data", "grid"),
        (
            Attr("mode", "str", "linear"),
            Attr("padding_mode", "str", "zeros"),
            Attr("align_corners", "bool", False),
        ),
        _grid_sample_rel,
        lambda x, g, *, attrs: topi.image.grid_sample(
            x, g, attrs.mode, attrs.padding_mode, attrs.align_corners
        ),
        _grid_sample_ref,
        OpPattern.INJECTIVE,
        "data (N, C, *S) sampled at grid (N, *out, rank) (coordinates innermost axis first).",
    ),
)

__all__ = ["OPERATORS"]
