"""Layout operators: Reshape, Flatten, Squeeze, Unsqueeze, Expand, Transpose, Concat, Split, Tile,
Pad, Trilu. Shapes, axes and pads must be known at import; every one folds when its data is known.

Target shapes come from ONNX's inference of the output (which resolves Reshape's 0 and -1, and
Expand's two-way broadcast), so the graph always holds explicit static shapes.
"""

from __future__ import annotations

import numpy as np

from tessel.arith.dims import broadcast_dims, dim_product
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold, item, tuple_of
from tessel.graph.expr import Expr

Result = Expr | np.ndarray


def reshape_to(expr: Expr, shape: tuple[int, ...]) -> Expr:
    """`expr` reshaped to the explicit `shape`: a 0 in it is a zero-size extent, never Relay's
    "copy the input extent" code, so such a reshape says allowzero."""
    if 0 in shape:
        return call("reshape", expr, newshape=shape, allowzero=True)
    return call("reshape", expr, newshape=shape)


def _reshape_to_output(node: OnnxNode) -> Result:
    """The first input reshaped to the output's inferred shape (explicit: ONNX's inference has
    resolved the target's 0 and -1 by the node's allowzero)."""
    shape = node.out_type().shape
    if node.input(0).is_constant:
        return node.input(0).data.reshape(shape)
    if node.shape(0) == shape:
        return node.expr(0)
    return reshape_to(node.expr(0), shape)


def convert_reshape(node: OnnxNode) -> Result:
    """Reshape: the shape input (with 0 and -1) must be known at import, in sizes or in shape
    symbols (an exporter's Shape -> Gather -> Concat of a (batch, seq) input)."""
    target = node.static(1, "target shape")
    if node.output_types[0] is None and not node.input(0).is_constant:
        # ONNX's inference cannot name the output's symbolic dimensions: Relay's reshape reads
        # ONNX's codes (0 copies an extent unless allowzero, -1 is inferred) and its relation
        # gives the type (tessel/frontend/onnx/symbolic.py).
        allowzero = bool(node.attr("allowzero", 0))
        return call("reshape", node.expr(0), newshape=tuple(target.tolist()), allowzero=allowzero)
    return _reshape_to_output(node)


def convert_flatten(node: OnnxNode) -> Result:
    """Flatten: reshape to [prod(shape[:axis]), prod(shape[axis:])]."""
    shape = node.shape(0)
    if node.output_types[0] is None and not node.input(0).is_constant:
        axis = node.axis(node.attr("axis", 1), len(shape) + 1)
        target = (dim_product(shape[:axis]), dim_product(shape[axis:]))
        return call("reshape", node.expr(0), newshape=target, allowzero=True)
    return _reshape_to_output(node)


def _axes_list(node: OnnxNode, first_input_opset: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or from input 1; None when not given at all."""
    if node.opset >= first_input_opset:
        return node.static(1, "axes").reshape(-1).tolist() if node.has_input(1) else None
    axes = node.attr("axes")
    return None if axes is None else list(axes)


def convert_squeeze(node: OnnxNode) -> Result:
    """Squeeze (axes attribute before opset 13, input after): squeeze(axis=)."""
    shape = node.shape(0)
    axes = _axes_list(node, 13)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    normalized = tuple(sorted({node.axis(a, len(shape)) for a in axes}))
    if any(shape[a] != 1 for a in normalized):
        raise node.error(f"cannot squeeze axes {axes} of shape {list(shape)}: they are not 1")
    if node.input(0).is_constant:
        return np.squeeze(node.input(0).data, axis=normalized)
    if not normalized:
        return node.expr(0)
    return call("squeeze", node.expr(0), axis=normalized)


def convert_unsqueeze(node: OnnxNode) -> Result:
    """Unsqueeze (axes attribute before opset 13, input after): expand_dims for one new axis,
    reshape for several."""
    axes = _axes_list(node, 13)
    if axes is None:
        raise node.error("it has no axes")
    out_rank = len(node.shape(0)) + len(axes)
    normalized = sorted(node.axis(a, out_rank) for a in axes)
    if node.input(0).is_constant or len(normalized) > 1:
        return _reshape_to_output(node)
    return call("expand_dims", node.expr(0), axis=normalized[0], num_newaxis=1)


def convert_expand(node: OnnxNode) -> Result:
    """Expand: broadcast_to the output shape (the two-way broadcast of input and target)."""
    target = node.static(1, "target shape")
    if node.output_types[0] is None and target.dtype == object:
        # A symbolic target (an exporter's expand(batch, -1)): ONNX's two-way broadcast of the
        # input's shape and the target, proved by the symbols (tessel.arith.dims).
        try:
            shape = broadcast_dims(node.shape(0), tuple(target.tolist()))
        except ValueError as err:
            raise node.error(f"cannot expand: {err}") from None
        return call("broadcast_to", node.expr(0), shape=shape)
    shape = node.out_type().shape
    if node.input(0).is_constant:
        return np.broadcast_to(node.input(0).data, shape).copy()
    if node.shape(0) == shape:
        return node.expr(0)
    return call("broadcast_to", node.expr(0), shape=shape)


def convert_transpose(node: OnnxNode) -> Result:
    """Transpose: transpose(axes=perm), reversing the axes when perm is omitted."""
    ndim = len(node.shape(0))
    perm = tuple(int(p) for p in node.attr("perm", range(ndim - 1, -1, -1)))
    if node.input(0).is_constant:
        return np.transpose(node.input(0).data, perm)
    if perm == tuple(range(ndim)):
        return node.expr(0)
    return call("transpose", node.expr(0), axes=perm)


def convert_concat(node: OnnxNode) -> Result:
    """Concat: concatenate(Tuple, axis=)."""
    axis = node.axis(node.attr("axis"), len(node.out_type().shape))
    if node.all_constant():
        return np.concatenate(node.arrays(), axis=axis)
    if len(node.inputs) == 1:
        return node.expr(0)
    return call("concatenate", tuple_of([node.expr(i) for i in range(len(node.inputs))]), axis=axis)


def _split_sizes(node: OnnxNode, axis: int) -> list[int]:
    """The size of each part: the split attribute (before opset 13) or input, else the sizes
    ONNX inferred (equal parts; opset 18's num_outputs makes the last part smaller)."""
    if node.opset < 13 and node.attr("split") is not None:
        return [int(s) for s in node.attr("split")]
    if node.opset >= 13 and node.has_input(1):
        return [int(s) for s in node.static(1, "split")]
    if any(ty is None for ty in node.output_types):
        raise node.error("an output without a name needs the split sizes given")
    return [node.out_type(i).shape[axis] for i in range(len(node.output_types))]


def convert_split(node: OnnxNode) -> list[Result]:
    """Split: split(indices_or_sections=<split points>, axis=), one TupleGetItem per output."""
    axis = node.axis(node.attr("axis", 0), len(node.shape(0)))
    sizes = _split_sizes(node, axis)
    if sum(sizes) != node.shape(0)[axis]:
        raise node.error(f"split sizes {sizes} do not add up to dimension {node.shape(0)[axis]}")
    points = tuple(int(p) for p in np.cumsum(sizes)[:-1])
    if node.input(0).is_constant:
        return list(np.split(node.input(0).data, points, axis=axis))
    parts = call("split", node.expr(0), indices_or_sections=points, axis=axis)
    return [item(parts, i) for i in range(len(sizes))]


def convert_tile(node: OnnxNode) -> Result:
    """Tile, the repeats known at import: x [d0, d1, ...] reshaped to [1, d0, 1, d1, ...],
    broadcast to [r0, d0, r1, d1, ...] and reshaped to [r0 * d0, r1 * d1, ...] (row-major order
    puts each repeat's copy of an axis before the next, as numpy.tile does)."""
    reps = tuple(int(r) for r in node.static(1, "repeats"))
    shape = tuple(node.shape(0))
    if len(reps) != len(shape) or any(r < 0 for r in reps):
        raise node.error(
            f"repeats {list(reps)} must be {len(shape)} non-negative counts, one "
            f"per axis of the input's shape {list(shape)}"
        )
    if node.input(0).is_constant:
        return np.tile(node.input(0).data, reps)
    if all(r == 1 for r in reps):
        return node.expr(0)
    interleaved = tuple(d for pair in zip(reps, shape, strict=True) for d in pair)
    ones = tuple(d for extent in shape for d in (1, extent))
    spread = reshape_to(node.expr(0), ones)
    copies = call("broadcast_to", spread, shape=interleaved)
    return reshape_to(copies, tuple(r * d for r, d in zip(reps, shape, strict=True)))


_PAD_MODES = ("constant", "edge", "reflect", "wrap")


def _pad_widths(node: OnnxNode, pads: list[int], axes: list[int]) -> list[tuple[int, int]]:
    """(before, after) per axis of the input from ONNX's pads (all starts, then all ends) over
    `axes`; negative widths crop."""
    ndim = len(node.shape(0))
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} do not give a start and an end for each of {len(axes)} axes")
    width = [(0, 0)] * ndim
    for i, axis in enumerate(axes):
        width[axis] = (pads[i], pads[i + len(axes)])
    return width


def _padded_positions(extent: int, before: int, after: int, mode: str) -> np.ndarray:
    """Which input position each output position along one axis reads (edge, reflect, wrap):
    NumPy's padding of the positions themselves, then the crop of negative widths."""
    positions = np.arange(extent)
    positions = np.pad(positions, (max(before, 0), max(after, 0)), mode=mode)
    return positions[max(-before, 0) : len(positions) - max(-after, 0)]


def _crop(expr: Expr, width: list[tuple[int, int]], padded: tuple[int, ...]) -> Expr:
    """`expr` (of shape `padded`) without the cells that negative widths remove."""
    axes = [d for d, (b, a) in enumerate(width) if b < 0 or a < 0]
    if not axes:
        return expr
    begin = tuple(max(-width[d][0], 0) for d in axes)
    end = tuple(padded[d] - max(-width[d][1], 0) for d in axes)
    return call(
        "strided_slice", expr, begin=begin, end=end, strides=(1,) * len(axes), axes=tuple(axes)
    )


def _pad_constant(node: OnnxNode, width: list[tuple[int, int]], value: np.ndarray) -> Expr:
    """Constant padding: nn.pad by the positive widths, then the crop of the negative ones."""
    grow = tuple((max(b, 0), max(a, 0)) for b, a in width)
    expr = node.expr(0)
    if any(b or a for b, a in grow):
        pad_value = const(np.asarray(value).reshape(()), node.input(0).type.dtype)
        expr = call("nn.pad", expr, pad_value, pad_width=grow, pad_mode="constant")
    padded = tuple(n + b + a for n, (b, a) in zip(node.shape(0), grow, strict=True))
    return _crop(expr, width, padded)


def _pad_by_positions(node: OnnxNode, width: list[tuple[int, int]], mode: str) -> Expr:
    """Edge, reflect or wrap padding as a `take` of the positions each output reads, per axis:
    exact for any width (wider than the axis, negative) where nn.pad's reflect is not."""
    expr = node.expr(0)
    for axis, (before, after) in enumerate(width):
        if before == after == 0:
            continue
        positions = _padded_positions(node.shape(0)[axis], before, after, mode)
        expr = call("take", expr, const(positions.astype(np.int64)), axis=axis, mode="fast")
    return expr


def _pad(node: OnnxNode, mode: str, pads: list[int], axes: list[int], value: np.ndarray) -> Result:
    """The data padded (or cropped, by negative pads) in `mode`."""
    if mode not in _PAD_MODES:
        raise node.error(f"mode {mode!r} is not supported", hint=f"use one of {list(_PAD_MODES)}")
    width = _pad_widths(node, pads, axes)
    if mode == "constant":
        if node.input(0).is_constant:
            return _pad_array(node, width, mode, value)
        return _pad_constant(node, width, value)
    _check_repeatable(node, width, mode)
    if node.input(0).is_constant:
        return _pad_array(node, width, mode, value)
    if _fits_nn_pad(node.shape(0), width, mode):
        pad_value = const(np.zeros((), node.input(0).type.dtype))
        return call("nn.pad", node.expr(0), pad_value, pad_width=tuple(width), pad_mode=mode)
    return _pad_by_positions(node, width, mode)


def _check_repeatable(node: OnnxNode, width: list[tuple[int, int]], mode: str) -> None:
    """Edge, reflect and wrap padding repeat the data: an axis of extent 0 cannot grow."""
    for axis, (extent, (before, after)) in enumerate(zip(node.shape(0), width, strict=True)):
        if extent == 0 and max(before, after) > 0:
            raise node.error(f"{mode} padding of axis {axis}, of extent 0, has nothing to repeat")


def _fits_nn_pad(shape: tuple[int, ...], width: list[tuple[int, int]], mode: str) -> bool:
    """True if nn.pad pads like ONNX: no crops, no wrap, reflections narrower than the axis."""
    if mode == "wrap" or any(b < 0 or a < 0 for b, a in width):
        return False
    return mode == "edge" or all(max(w) < n for w, n in zip(width, shape, strict=True))


def _pad_array(
    node: OnnxNode, width: list[tuple[int, int]], mode: str, value: np.ndarray
) -> np.ndarray:
    """The padding of a constant input, folded."""
    data = node.input(0).data
    if mode == "constant":
        grow = [(max(b, 0), max(a, 0)) for b, a in width]
        padded = np.pad(data, grow, mode="constant", constant_values=np.asarray(value).item())
        crop = tuple(
            slice(max(-b, 0), padded.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(width)
        )
        return padded[crop].astype(data.dtype)
    for axis, (before, after) in enumerate(width):
        positions = _padded_positions(data.shape[axis], before, after, mode)
        data = np.take(data, positions, axis=axis)
    return data


def convert_pad(node: OnnxNode) -> Result:
    """Pad (opset 11+: pads, constant value and, from 18, axes are inputs)."""
    ndim = len(node.shape(0))
    pads = [int(p) for p in node.static(1, "pads")]
    axes = list(range(ndim))
    if node.opset >= 18 and node.has_input(3):
        axes = [node.axis(int(a), ndim) for a in node.static(3, "axes")]
    value = node.static_or(2, "constant value", np.zeros((), node.input(0).type.dtype))
    return _pad(node, node.attr("mode", "constant"), pads, axes, value)


def convert_pad_attributes(node: OnnxNode) -> Result:
    """Pad before opset 11: pads and the (float) constant value are attributes."""
    pads = [int(p) for p in node.attr("pads", node.attr("paddings", []))]
    value = np.asarray(node.attr("value", 0.0)).astype(node.input(0).type.dtype)
    return _pad(node, node.attr("mode", "constant"), pads, list(range(len(node.shape(0)))), value)


def convert_trilu(node: OnnxNode) -> Result:
    """Trilu (opset 14+): trilu(data, k, upper=); the diagonal offset k is an optional input."""
    upper = bool(node.attr("upper", 1))
    k = node.input(1).expr if node.has_input(1) else const(0, "int64")
    if node.all_constant():
        k_array = node.input(1).data if node.has_input(1) else np.zeros((), np.int64)
        return fold("trilu", node.input(0).data, k_array.reshape(()), upper=upper)
    if node.has_input(1) and node.input(1).type.shape != ():
        k = call("reshape", k, newshape=())
    return call("trilu", node.expr(0), k, upper=upper)


TABLE: dict[str, tuple[Entry, ...]] = {
    # layout
    "Reshape": every_opset(convert_reshape),  # allowzero from 14
    "Flatten": every_opset(convert_flatten),
    "Squeeze": every_opset(convert_squeeze),  # axes input from 13
    "Unsqueeze": every_opset(convert_unsqueeze),  # axes input from 13
    "Expand": every_opset(convert_expand),
    "Transpose": every_opset(convert_transpose),
    "Concat": every_opset(convert_concat),
    "Split": every_opset(convert_split),  # split input from 13, num_outputs from 18
    "Tile": every_opset(convert_tile),
    "Pad": ((FIRST_OPSET, 10, convert_pad_attributes), (11, LAST_OPSET, convert_pad)),
    "Trilu": every_opset(convert_trilu, first=14),
}
