"""Selection by value: TopK (the topk graph op), and the operators whose output shape depends on
input values: NonZero, Compress, Unique, NonMaxSuppression. Tessel's graphs are static, so those
fold when their inputs are known at import; `node.static` otherwise raises ValueNeededError, which
names the graph inputs to bind (the ONNX backend binds them and imports again)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, item
from tessel.graph.expr import Expr
from tessel.graph.op import get_op


def _topk(node: OnnxNode, k: int) -> list[Expr] | list[np.ndarray]:
    """[values, indices] of the k largest (or, from opset 11, smallest) elements along `axis`;
    always sorted, which also satisfies sorted=0 (any order)."""
    axis = node.axis(int(node.attr("axis", -1)), len(node.shape(0)))
    extent = node.shape(0)[axis]
    if not 0 <= k <= extent:
        raise node.error(f"k = {k} must lie in [0, {extent}] (the extent of axis {axis})")
    attrs = {"k": k, "axis": axis, "largest": bool(node.attr("largest", 1)), "dtype": "int64"}
    if node.input(0).is_constant:
        return list(_fold_topk(node.input(0).data, attrs))
    pair = call("topk", node.expr(0), **attrs)
    return [item(pair, 0), item(pair, 1)]


def _fold_topk(data: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """topk of a constant, by the operator's NumPy reference (relay.fold takes one output)."""
    values, indices = get_op("topk").evaluate([data], attrs)
    return values, indices


def convert_topk(node: OnnxNode) -> list[Expr] | list[np.ndarray]:
    """TopK (opset 10+): k is a one-element input."""
    k = node.static(1, "k").reshape(-1)
    if k.size != 1:
        raise node.error(f"k must hold one value, got {k.tolist()}")
    return _topk(node, int(k[0]))


def convert_topk_attribute(node: OnnxNode) -> list[Expr] | list[np.ndarray]:
    """TopK before opset 10: k is an attribute."""
    return _topk(node, int(node.attr("k")))


def convert_non_zero(node: OnnxNode) -> np.ndarray:
    """NonZero: the indices of the non-zero elements, one row per axis ([rank, count], int64)."""
    data = node.static(0, "data")
    return np.asarray(np.nonzero(np.atleast_1d(data) if data.ndim == 0 else data), dtype=np.int64)


def convert_compress(node: OnnxNode) -> np.ndarray:
    """Compress: the slices along `axis` (of the flattened data when there is none) whose
    condition is true; a condition shorter than the axis keeps nothing past its end."""
    data, condition = node.static(0, "data"), node.static(1, "condition").astype(bool)
    axis = node.attr("axis")
    if axis is None:
        data, axis = data.reshape(-1), 0
    axis = node.axis(int(axis), data.ndim)
    if condition.ndim != 1 or len(condition) > data.shape[axis]:
        raise node.error(
            f"condition of shape {list(condition.shape)} does not fit axis {axis} of "
            f"shape {list(data.shape)}"
        )
    return np.compress(condition, data, axis=axis)


def convert_unique(node: OnnxNode) -> list[np.ndarray]:
    """Unique: the distinct elements (or slices along `axis`), sorted or in order of first
    occurrence, with the first index, the inverse indices and the count of each."""
    data = node.static(0, "X")
    axis = node.attr("axis")
    flat = axis is None
    if not flat:
        axis = node.axis(int(axis), data.ndim)
    values, first, inverse, counts = np.unique(
        data.reshape(-1) if flat else data, True, True, True, axis=None if flat else axis
    )
    inverse = inverse.reshape(-1)
    if not node.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(data.reshape(-1) if flat else data, first[order], axis=0 if flat else axis)
        first, inverse, counts = first[order], rank[inverse], counts[order]
    int64 = [np.asarray(a, dtype=np.int64) for a in (first, inverse, counts)]
    return [values, *int64]


def _corners(box: np.ndarray, center_point_box: int) -> tuple[float, float, float, float]:
    """(y_min, x_min, y_max, x_max) of a box given as two corners (either order) or as
    (x_center, y_center, width, height)."""
    if center_point_box:
        x, y, w, h = (float(v) for v in box)
        return y - h / 2, x - w / 2, y + h / 2, x + w / 2
    y1, x1, y2, x2 = (float(v) for v in box)
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _overlaps(a: tuple[float, ...], b: tuple[float, ...], iou_threshold: float) -> bool:
    """True if the intersection over union of boxes `a` and `b` exceeds the threshold
    (onnxruntime's and ONNX's reference rule: empty boxes never suppress)."""
    height = min(a[2], b[2]) - max(a[0], b[0])
    width = min(a[3], b[3]) - max(a[1], b[1])
    if height <= 0 or width <= 0:
        return False
    inter = height * width
    area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > iou_threshold


def _select(boxes: list, scores: np.ndarray, limit: int, iou: float, floor: float | None) -> list:
    """Greedy selection in one batch and class: the highest score first (the lower index first
    among equal scores), dropping boxes that overlap a selected one."""
    candidates = [i for i in range(len(scores)) if floor is None or scores[i] > floor]
    candidates.sort(key=lambda i: (-scores[i], i))
    selected: list[int] = []
    for i in candidates:
        if len(selected) >= limit:
            break
        if not any(_overlaps(boxes[i], boxes[j], iou) for j in selected):
            selected.append(i)
    return selected


def _scalar(node: OnnxNode, index: int, what: str, default: float | None) -> float | None:
    """Optional scalar input `index` (an empty tensor counts as omitted)."""
    if not node.has_input(index):
        return default
    array = node.static(index, what).reshape(-1)
    return default if array.size == 0 else array[0].item()


def convert_non_max_suppression(node: OnnxNode) -> np.ndarray:
    """NonMaxSuppression: [batch, class, box] of each selected box, per batch and class in
    order of selection (int64 [count, 3])."""
    boxes, scores = node.static(0, "boxes"), node.static(1, "scores")
    limit = max(int(_scalar(node, 2, "max_output_boxes_per_class", 0)), 0)
    iou = float(_scalar(node, 3, "iou_threshold", 0.0))
    floor = _scalar(node, 4, "score_threshold", None)
    center = int(node.attr("center_point_box", 0))
    rows = []
    for batch in range(boxes.shape[0]):
        corners = [_corners(box, center) for box in boxes[batch]]
        for cls in range(scores.shape[1]):
            chosen = _select(corners, scores[batch, cls], limit, iou, floor)
            rows.extend((batch, cls, i) for i in chosen)
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


TABLE: dict[str, tuple[Entry, ...]] = {
    # output shapes that depend on values: folded
    "TopK": ((FIRST_OPSET, 9, convert_topk_attribute), (10, LAST_OPSET, convert_topk)),
    "NonZero": every_opset(convert_non_zero),
    "Compress": every_opset(convert_compress),
    "Unique": every_opset(convert_unique),
    "NonMaxSuppression": every_opset(convert_non_max_suppression),
}
