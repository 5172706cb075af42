"""Indexing: Gather (take), GatherElements (gather), GatherND (gather_nd), Slice (strided_slice),
ScatterElements (scatter_elements) and ScatterND (scatter_nd)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType

Result = Expr | np.ndarray


def convert_gather(node: OnnxNode) -> Result:
    """Gather: take(axis=). ONNX allows negative indices; known indices are normalised at import,
    graph indices by `where(i < 0, i + dim, i)`."""
    shape = node.shape(0)
    axis = node.axis(node.attr("axis", 0), len(shape))
    dim = shape[axis]
    indices = node.input(1)
    if indices.is_constant:
        normalized = np.where(indices.data < 0, indices.data + dim, indices.data)
        if np.any(normalized < 0) or np.any(normalized >= dim):
            raise node.error(f"indices {indices.data.tolist()} are out of range for size {dim}")
        if node.input(0).is_constant:
            return np.take(node.input(0).data, normalized, axis=axis)
        return call("take", node.expr(0), const(normalized.astype(indices.type.dtype)), axis=axis)
    dtype = indices.type.dtype
    negative = call("less", indices.expr, const(0, dtype))
    wrapped = call("where", negative, call("add", indices.expr, const(dim, dtype)), indices.expr)
    return call("take", node.expr(0), wrapped, axis=axis)


def _check_known_indices(node: OnnxNode, extents: tuple[int, ...] | int) -> None:
    """Indices known at import (input 1) must lie in [-extent, extent) of the axis they address
    (`extents`: one per position of the last axis, for GatherND and ScatterND); indices computed
    in the graph are trusted, as onnxruntime's kernels check them only at run time."""
    indices = node.input(1)
    if not indices.is_constant or indices.data.size == 0:
        return
    bound = np.asarray(extents)
    if np.any(indices.data < -bound) or np.any(indices.data >= bound):
        raise node.error(f"indices {indices.data.tolist()} are out of range for extents "
                         f"{bound.tolist()}")  # fmt: skip


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


def _slice_params(node: OnnxNode) -> list[tuple[int, int, int, int]]:
    """(axis, begin, end, stride) for every axis the node slices, in axis order."""
    shape = node.shape(0)
    starts = node.static(1, "starts").tolist()
    ends = node.static(2, "ends").tolist()
    axes = node.static_or(3, "axes", np.arange(len(starts))).tolist()
    steps = node.static_or(4, "steps", np.ones(len(starts), np.int64)).tolist()
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    normalized = [node.axis(int(a), len(shape)) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise node.error(f"axes {axes} name an axis twice")
    if 0 in steps:
        raise node.error("a step is 0")
    params = []
    for axis, start, end, step in sorted(zip(normalized, starts, ends, steps, strict=True)):
        params.append((axis, *slice_bounds(int(start), int(end), int(step), shape[axis])))
    return params


def convert_slice(node: OnnxNode) -> Value | np.ndarray:
    """Slice (opset 10+: starts, ends, axes, steps are inputs): strided_slice over the sliced axes,
    with negative steps and out-of-range bounds resolved at import."""
    params = _slice_params(node)
    shape = node.shape(0)
    if node.input(0).is_constant:
        index = [slice(None)] * len(shape)
        for axis, begin, end, stride in params:
            index[axis] = slice(begin, end, stride)
        return node.input(0).data[tuple(index)]
    params = [p for p in params if p[1:] != (0, shape[p[0]], 1)]  # drop the whole-axis slices
    if not params:
        return node.input(0)
    out_shape = list(shape)
    for axis, begin, end, stride in params:
        out_shape[axis] = len(range(begin, max(end, -1), stride))
    sliced = call(
        "strided_slice",
        node.expr(0),
        begin=tuple(p[1] for p in params),
        end=tuple(p[2] for p in params),
        strides=tuple(p[3] for p in params),
        axes=tuple(p[0] for p in params),
    )
    return Value(sliced, TensorType(tuple(out_shape), node.input(0).type.dtype))


TABLE: dict[str, tuple[Entry, ...]] = {
    # indexing
    "Gather": every_opset(convert_gather),
    "Slice": every_opset(convert_slice, first=10),  # starts/ends are inputs from 10
    "GatherElements": every_opset(convert_gather_elements),
    "GatherND": every_opset(convert_gather_nd),  # batch_dims from 12
    "ScatterElements": every_opset(convert_scatter_elements),  # reduction from 16 (max/min 18)
    "ScatterND": every_opset(convert_scatter_nd),  # reduction from 16 (max/min 18)
}
