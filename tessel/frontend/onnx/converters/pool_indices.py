"""MaxPool's Indices output: for each window, the flat position (over N, C and the spatial axes;
the spatial axes column-major with storage_order=1) of its first maximum in row-major window
order, as onnxruntime and ONNX's reference pick it.

Composed from existing operators: the windows' taps as strided slices of the input padded with
-inf, stacked on a new axis; argmax over that axis picks the tap, and the same slices of a
constant tensor of flat positions give that tap's position. The values compare in float64 with
-inf raised to the lowest finite float64 (below every float32 and integer), so padding never
ties with a value of the input, whatever its dtype."""

from __future__ import annotations

import itertools

import numpy as np

from tessel.frontend.onnx.converters.windows import Window
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.graph.expr import Expr


def _positions(shape: tuple[int, ...], column_major: bool) -> np.ndarray:
    """The flat position of every element of an (N, C, *spatial) tensor."""
    planes = np.arange(shape[0] * shape[1], dtype=np.int64)
    planes = planes.reshape(*shape[:2], *(1,) * (len(shape) - 2))
    spatial = shape[2:]
    order = "F" if column_major else "C"
    inner = np.arange(int(np.prod(spatial)), dtype=np.int64).reshape(spatial, order=order)
    return planes * int(np.prod(spatial)) + inner


def _taps(value: Expr, window: Window, out: tuple[int, ...]) -> list[Expr]:
    """One strided slice of padded `value` per tap of the window, each of spatial shape `out`."""
    slices = []
    for tap in itertools.product(*(range(k) for k in window.kernel)):
        begin = [t * d for t, d in zip(tap, window.dilations, strict=True)]
        end = [b + (o - 1) * s + 1 for b, o, s in zip(begin, out, window.strides, strict=True)]
        axes = tuple(range(2, 2 + window.rank))
        slices.append(
            call("strided_slice", value, begin=begin, end=end, strides=window.strides, axes=axes)
        )
    return slices


def _stacked(value: Expr, pad_value: np.ndarray, window: Window, out: tuple[int, ...]) -> Expr:
    rank = window.rank
    widths = [(0, 0), (0, 0)] + [(window.pads[d], window.pads[rank + d]) for d in range(rank)]
    padded = call("nn.pad", value, const(pad_value), pad_width=widths)
    taps = [call("expand_dims", t, axis=0) for t in _taps(padded, window, out)]
    return call("concatenate", tuple_of(taps), axis=0)


def argmax_indices(node: OnnxNode, window: Window, out_shape: tuple[int, ...]) -> Expr:
    """The Indices output of a MaxPool node whose windows (ceil_mode resolved) are `window`."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    if len(window.kernel) and np.prod(window.kernel) > 64:
        raise node.error(
            f"the Indices output of a {list(window.kernel)} window (over 64 taps) is not supported"
        )
    spatial = out_shape[2:]
    if dtype not in ("float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32"):
        raise node.error(f"the Indices output of a {dtype} tensor is not supported")
    wide = call(
        "maximum", call("cast", node.expr(0), dtype="float64"), const(np.finfo(np.float64).min)
    )
    values = _stacked(wide, np.array(-np.inf), window, spatial)
    column_major = bool(node.attr("storage_order", 0))
    positions = _stacked(
        const(_positions(shape, column_major)), np.array(-1, np.int64), window, spatial
    )
    best = call("argmax", values, axis=(0,), keepdims=True)
    picked = call("gather", positions, call("cast", best, dtype="int64"), axis=0)
    return call("reshape", picked, newshape=out_shape)
