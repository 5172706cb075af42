"""Indexing: Gather (take), GatherElements (gather), GatherND (gather_nd), Slice (strided_slice),
ScatterElements (scatter_elements) and ScatterND (scatter_nd)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tessel.arith.dims import compare_dims, dim_text
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.frontend.onnx.symbolic import size_value
from tessel.frontend.onnx.values import Value
from tessel.graph.evaluate import evaluate
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType
from tessel.ir.expr import PrimExpr

Result = Expr | np.ndarray


def convert_gather(node: OnnxNode) -> Result:
    """Gather: take(axis=). ONNX allows negative indices; known indices are normalised at import,
    graph indices by `where(i < 0, i + dim, i)`."""
    shape = node.shape(0)
    axis = node.axis(node.attr("axis", 0), len(shape))
    dim = shape[axis]
    indices = node.input(1)
    if indices.is_constant and isinstance(dim, PrimExpr):
        return _gather_on_symbolic_axis(node, axis, dim)
    if indices.is_constant:
        normalized = np.where(indices.data < 0, indices.data + dim, indices.data)
        if np.any(normalized < 0) or np.any(normalized >= dim):
            raise node.error(f"indices {indices.data.tolist()} are out of range for size {dim}")
        if node.input(0).is_constant:
            return np.take(node.input(0).data, normalized, axis=axis)
        return call("take", node.expr(0), const(normalized.astype(indices.type.dtype)), axis=axis)
    dtype = indices.type.dtype
    negative = call("less", indices.expr, const(0, dtype))
    size = size_value(dim, dtype)  # a symbolic axis: its size when the graph runs
    wrapped = call("where", negative, call("add", indices.expr, size), indices.expr)
    return call("take", node.expr(0), wrapped, axis=axis)


def _gather_on_symbolic_axis(node: OnnxNode, axis: int, dim: PrimExpr) -> Result:
    """Gather of known indices along a symbolic axis: indices proved within it are taken as
    they are; one negative index (x[:, -1]) is the slice [k:k+1] of the axis, squeezed."""
    data = node.input(1).data
    if data.ndim == 0 and int(data) < 0:
        k = int(data)
        end = k + 1 if k + 1 < 0 else _TO_THE_END[0]
        sliced = call("strided_slice", node.expr(0), begin=(k,), end=(end,), axes=(axis,))
        return call("squeeze", sliced, axis=(axis,))
    if any(compare_dims("<", int(i), dim) is not True or int(i) < 0 for i in data.reshape(-1)):
        raise node.error(
            f"indices {data.tolist()} are not proved within the axis of symbolic size "
            f"{dim_text(dim)}",
            hint="give the dimension bounds (dims={'seq': (1, 512)})",
        )
    return call("take", node.expr(0), const(data), axis=axis)


def _check_known_indices(node: OnnxNode, extents: tuple[int, ...] | int) -> None:
    """Indices known at import (input 1) must lie in [-extent, extent) of the axis they address
    (`extents`: one per position of the last axis, for GatherND and ScatterND); indices computed
    in the graph are trusted, as onnxruntime's kernels check them only at run time."""
    indices = node.input(1)
    if not indices.is_constant or indices.data.size == 0:
        return
    bound = np.asarray(extents)
    if np.any(indices.data < -bound) or np.any(indices.data >= bound):
        raise node.error(
            f"indices {indices.data.tolist()} are out of range for extents {bound.tolist()}"
        )


def convert_gather_elements(node: OnnxNode) -> Result:
    """GatherElements: gather(axis=), which reads negative indices from the end."""
    axis = node.axis(node.attr("axis", 0), len(node.shape(0)))
    _check_known_indices(node, node.shape(0)[axis])
    if node.all_constant():
        return fold("gather", *node.arrays(), axis=axis)
    return call("gather", node.expr(0), node.expr(1), axis=axis)


def _tuples_first(node: OnnxNode, index: int) -> Expr | np.ndarray:
    """Index tuples from ONNX's layout (the tuple along the last axis) to TVM's (along the
    first), as gather_nd and scatter_nd take them."""
    value = node.input(index)
    rank = len(value.type.shape)
    if value.is_constant:
        return np.ascontiguousarray(np.moveaxis(value.data, -1, 0))
    if rank == 1:
        return value.expr
    return call("transpose", value.expr, axes=(rank - 1, *range(rank - 1)))


def convert_gather_nd(node: OnnxNode) -> Result:
    """GatherND (batch_dims from opset 12): gather_nd, with the index tuples moved to axis 0."""
    batch_dims = int(node.attr("batch_dims", 0))
    depth = node.shape(1)[-1]
    _check_known_indices(node, node.shape(0)[batch_dims : batch_dims + depth])
    indices = _tuples_first(node, 1)
    if node.all_constant():
        return fold("gather_nd", node.input(0).data, indices, batch_dims=batch_dims)
    return call("gather_nd", node.expr(0), _as_expr(indices), batch_dims=batch_dims)


def _as_expr(value: Expr | np.ndarray) -> Expr:
    return const(value) if isinstance(value, np.ndarray) else value


def _reduction(node: OnnxNode) -> str:
    """The scatter's reduction (from opset 16; max and min from 18), "none" named "update"."""
    reduction = node.attr("reduction", "none")
    return "update" if reduction == "none" else reduction


def convert_scatter_elements(node: OnnxNode) -> Result:
    """ScatterElements: scatter_elements(axis=, reduction=)."""
    axis = node.axis(node.attr("axis", 0), len(node.shape(0)))
    attrs = {"axis": axis, "reduction": _reduction(node)}
    _check_known_indices(node, node.shape(0)[axis])
    if node.all_constant():
        return fold("scatter_elements", *node.arrays(), **attrs)
    return call("scatter_elements", node.expr(0), node.expr(1), node.expr(2), **attrs)


def convert_scatter_nd(node: OnnxNode) -> Result:
    """ScatterND: scatter_nd(mode=), with the index tuples moved to axis 0."""
    mode = _reduction(node)
    _check_known_indices(node, node.shape(0)[: node.shape(1)[-1]])
    indices = _tuples_first(node, 1)
    if node.all_constant():
        return fold("scatter_nd", node.input(0).data, indices, node.input(2).data, mode=mode)
    return call("scatter_nd", node.expr(0), _as_expr(indices), node.expr(2), mode=mode)


_TO_THE_END = (2**63 - 1, 2**31 - 1)


def slice_bounds(start: int, end: int, step: int, dim: int) -> tuple[int, int, int]:
    """One axis of an ONNX Slice as Relay strided_slice (begin, end, stride).

    ONNX counts negative bounds from the end and then clamps: to [0, dim] for a positive step,
    and for a negative step the start to [0, dim - 1] and the end to [-1, dim - 1]. That is
    Python's slicing except for a start below the axis with a negative step, which ONNX clamps to
    index 0 (one element) and Python to "before index 0" (nothing). Ends such as INT64_MAX or
    INT64_MIN + 1 clamp like any other, except an end of INT64_MAX (or INT32_MAX), which
    onnxruntime reads as NumPy's omitted end, "to the end in the step's direction", also for a
    negative step (which clamping would make empty). A negative step that runs through index 0
    ends at -1, which strided_slice (like NumPy) would read as "the last element", so it is
    written -(dim + 1), which both clamp to "before index 0". An empty slice is written 0:0.
    """
    start += dim if start < 0 else 0
    if end in _TO_THE_END:
        end = dim if step > 0 else -1
    elif end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    if len(range(start, end, step)) == 0:
        return 0, 0, step
    if step < 0 and end < 0:
        end = -(dim + 1)
    return start, end, step


def _slice_inputs(node: OnnxNode) -> tuple[list[int], list[int], list[int], list[int]]:
    """Starts, ends, axes and steps from the inputs (opset 10+)."""
    starts = node.static(1, "starts").tolist()
    ends = node.static(2, "ends").tolist()
    axes = node.static_or(3, "axes", np.arange(len(starts))).tolist()
    steps = node.static_or(4, "steps", np.ones(len(starts), np.int64)).tolist()
    return starts, ends, axes, steps


def _slice_attributes(node: OnnxNode) -> tuple[list[int], list[int], list[int], list[int]]:
    """Starts, ends and axes from the attributes (before opset 10: no steps)."""
    starts, ends = list(node.attr("starts", [])), list(node.attr("ends", []))
    axes = list(node.attr("axes", range(len(starts))))
    return starts, ends, axes, [1] * len(starts)


def _slice_params(
    node: OnnxNode, starts: list[int], ends: list[int], axes: list[int], steps: list[int]
) -> list[tuple[int, int, int, int]]:
    """(axis, begin, end, stride) for every axis the node slices, in axis order."""
    shape = node.shape(0)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    normalized = [node.axis(int(a), len(shape)) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} name an axis twice")
    if 0 in steps:
        raise node.error("a step is 0")
    params = []
    for axis, start, end, step in sorted(zip(normalized, starts, ends, steps, strict=True)):
        if any(isinstance(v, PrimExpr) for v in (start, end, shape[axis])):
            params.append((axis, *_symbolic_slice_bounds(node, start, end, int(step), shape[axis])))
        else:
            params.append((axis, *slice_bounds(int(start), int(end), int(step), shape[axis])))
    return params


def _symbolic_slice_bounds(node: OnnxNode, start: Any, end: Any, step: int, dim: Any) -> tuple:
    """One axis of a Slice whose bounds or extent are symbolic (a slice [0:seq] of the position
    table): the bounds as strided_slice takes them, which counts negative ints from the end and
    clamps as ONNX does for a positive step (symbolic bounds are sizes, so never negative)."""
    if step < 0:
        raise node.error("a negative step on a symbolic slice is not supported")
    if isinstance(end, int) and end in _TO_THE_END:
        end = dim
    return start, end, step


def convert_slice(node: OnnxNode) -> Value | np.ndarray:
    """Slice (opset 10+: starts, ends, axes, steps are inputs): strided_slice over the sliced axes,
    with negative steps and out-of-range bounds resolved at import."""
    return _slice(node, _slice_params(node, *_slice_inputs(node)))


def convert_slice_attributes(node: OnnxNode) -> Value | np.ndarray:
    """Slice before opset 10: starts, ends and axes are attributes, every step 1."""
    return _slice(node, _slice_params(node, *_slice_attributes(node)))


def _slice(node: OnnxNode, params: list[tuple[int, int, int, int]]) -> Value | np.ndarray:
    """The input sliced by (axis, begin, end, stride) `params`."""
    shape = node.shape(0)
    symbolic = any(isinstance(v, PrimExpr) for p in params for v in p)
    if node.input(0).is_constant and not symbolic:
        index = [slice(None)] * len(shape)
        for axis, begin, end, stride in params:
            index[axis] = slice(begin, end, stride)
        return node.input(0).data[tuple(index)]
    params = [p for p in params if p[1:] != (0, shape[p[0]], 1)]  # drop the whole-axis slices
    if not params:
        return node.input(0)
    sliced = call(
        "strided_slice",
        node.expr(0),
        begin=tuple(p[1] for p in params),
        end=tuple(p[2] for p in params),
        strides=tuple(p[3] for p in params),
        axes=tuple(p[0] for p in params),
    )
    if symbolic:  # the graph's relation types it (tessel/frontend/onnx/symbolic.py)
        return sliced
    out_shape = list(shape)
    for axis, begin, end, stride in params:
        out_shape[axis] = len(range(begin, max(end, -1), stride))
    return Value(sliced, TensorType(tuple(out_shape), node.input(0).type.dtype))


def _along(array_or_expr: Expr, axis: int, ndim: int) -> Expr:
    """A 1-D expression reshaped to lie along `axis` of a rank-`ndim` tensor (1 elsewhere)."""
    shape = [1] * ndim
    shape[axis] = -1
    return call("reshape", array_or_expr, newshape=tuple(shape))


def convert_reverse_sequence(node: OnnxNode) -> Result:
    """ReverseSequence: along the time axis, the first sequence_lens[b] elements of each batch
    entry b reversed and the rest kept: a gather from positions where(t < len, len - 1 - t, t)."""
    shape = node.shape(0)
    time_axis, batch_axis = int(node.attr("time_axis", 0)), int(node.attr("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1}:
        raise node.error(f"time_axis {time_axis} and batch_axis {batch_axis} must be 0 and 1")
    lens = call("cast", node.expr(1), dtype="int64")
    steps = _along(const(np.arange(shape[time_axis], dtype=np.int64)), time_axis, len(shape))
    lens = _along(lens, batch_axis, len(shape))
    reversed_step = call("subtract", call("subtract", lens, const(1, "int64")), steps)
    positions = call("where", call("less", steps, lens), reversed_step, steps)
    positions = call("broadcast_to", positions, shape=shape)
    if node.all_constant():
        return fold("gather", node.input(0).data, _fold_expr(positions), axis=time_axis)
    return call("gather", node.expr(0), positions, axis=time_axis)


def _fold_expr(expr: Expr) -> np.ndarray:
    """The value of an expression built from constants only (the graph's reference evaluator)."""
    return np.asarray(evaluate(expr))


def convert_tensor_scatter(node: OnnxNode) -> Result:
    """TensorScatter (opset 24): the update written into the cache along `axis` from position
    write_indices[b] of each batch entry b (modulo the axis in "circular" mode): a
    scatter_elements whose indices are write_indices[b] + s at step s of the update."""
    shape, update_shape = node.shape(0), node.shape(1)
    ndim, mode = len(shape), node.attr("mode", "linear")
    axis = node.axis(int(node.attr("axis", -2)), ndim)
    if axis == 0 or mode not in ("linear", "circular"):
        raise node.error(
            f"axis {axis} and mode {mode!r} are not supported: the axis must not be "
            "the batch axis 0, the mode linear or circular"
        )
    start = (
        call("cast", node.expr(2), dtype="int64")
        if node.has_input(2)
        else const(np.zeros(shape[0], np.int64))
    )
    steps = _along(const(np.arange(update_shape[axis], dtype=np.int64)), axis, ndim)
    positions = call("add", _along(start, 0, ndim), steps)
    if mode == "circular":
        positions = call("floor_mod", positions, const(shape[axis], "int64"))
    positions = call("broadcast_to", positions, shape=update_shape)
    if node.all_constant():
        data, update = node.input(0).data, node.input(1).data
        return fold("scatter_elements", data, _fold_expr(positions), update, axis=axis)
    return call("scatter_elements", node.expr(0), positions, node.expr(1), axis=axis)


def _one_hot_positions(node: OnnxNode, depth: int) -> Expr:
    """OneHot's indices as int64 positions: negative ones from the end (-depth..-1), and a
    non-integral float index at `depth`, which no position matches (ONNX compares values)."""
    indices = node.input(0)
    positions = call("cast", indices.expr, dtype="int64")
    if indices.type.dtype.startswith("float"):
        whole = call("equal", indices.expr, call("floor", indices.expr))
        positions = call("where", whole, positions, const(depth, "int64"))
    negative = call("less", positions, const(0, "int64"))
    return call("where", negative, call("add", positions, const(depth, "int64")), positions)


def convert_one_hot(node: OnnxNode) -> Result:
    """OneHot: one_hot with the (off, on) values pair; indices outside [-depth, depth) give an
    all-off row."""
    depth = node.static(1, "depth").reshape(-1)
    if depth.size != 1 or depth[0] < 1:
        raise node.error(f"depth must be one positive value, got {depth.tolist()}")
    depth = int(depth[0])
    values = node.input(2)
    if int(np.prod(values.type.shape)) != 2:
        raise node.error(f"values must hold (off, on), got shape {list(values.type.shape)}")
    flat = call("reshape", values.expr, newshape=(2,))
    off, on = (call("take", flat, const(np.int64(i)), axis=0) for i in (0, 1))
    axis = node.axis(int(node.attr("axis", -1)), len(node.shape(0)) + 1)
    expr = call("one_hot", _one_hot_positions(node, depth), on, off, depth=depth, axis=axis)
    return _fold_expr(expr) if node.all_constant() else expr


TABLE: dict[str, tuple[Entry, ...]] = {
    # indexing
    "Gather": every_opset(convert_gather),
    "Slice": ((FIRST_OPSET, 9, convert_slice_attributes), (10, LAST_OPSET, convert_slice)),
    "GatherElements": every_opset(convert_gather_elements),
    "GatherND": every_opset(convert_gather_nd),  # batch_dims from 12
    "Scatter": every_opset(convert_scatter_elements, last=10),  # ScatterElements' old name
    "ScatterElements": every_opset(convert_scatter_elements),  # reduction from 16 (max/min 18)
    "ScatterND": every_opset(convert_scatter_nd),  # reduction from 16 (max/min 18)
    "OneHot": every_opset(convert_one_hot),
    "ReverseSequence": every_opset(convert_reverse_sequence),
    "TensorScatter": every_opset(convert_tensor_scatter),
}
