"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both take scores [N, C, d1, ..., dk] and int targets [N, d1, ..., dk]: the loss of each target is
minus its class's score (its log-probability: log_softmax over C for SoftmaxCrossEntropyLoss),
scaled by the optional class `weight`; a target equal to `ignore_index` has weight 0 and its
score is never read (such a target may lie outside [0, C)). `reduction` "none" keeps the
per-target losses, "sum" adds them, "mean" divides the sum by the sum of the weights (the number
of targets not ignored when there are no weights), as ONNX's spec and onnxruntime do.
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.reduce import Result, apply, data_of, scalar
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset

REDUCTIONS = ("none", "sum", "mean")


def _check(node: OnnxNode) -> str:
    """The node's reduction, once its inputs have the shapes and dtypes the losses need."""
    scores, targets = node.shape(0), node.shape(1)
    if len(scores) < 2:
        raise node.error(f"the scores must have shape [N, C, ...], got {list(scores)}")
    expected = scores[:1] + scores[2:]
    if targets != expected:
        raise node.error(
            f"the targets of shape {list(targets)} do not match the scores of "
            f"shape {list(scores)} (expected {list(expected)})"
        )
    if not node.input(1).type.dtype.startswith("int"):
        raise node.error(f"the targets must be integers, got {node.input(1).type.dtype}")
    if not node.input(0).type.dtype.startswith("float"):
        raise node.error(f"the scores must be floating-point, got {node.input(0).type.dtype}")
    reduction = node.attr("reduction", "mean")
    if reduction not in REDUCTIONS:
        raise node.error(f"reduction {reduction!r} is not one of {list(REDUCTIONS)}")
    return reduction


def _nll(node: OnnxNode, log_prob: Result, reduction: str) -> Result:
    """The loss of `log_prob` [N, C, ...] at the node's targets (input 1) and weights (input 2)."""
    dtype = node.input(0).type.dtype
    targets = data_of(node, 1)
    ignore_index = node.attr("ignore_index")
    ignored = None
    if ignore_index is not None:
        ignored = apply("equal", targets, scalar(ignore_index, node.input(1).type.dtype))
        # An ignored target may be out of range: read class 0 instead, then weigh it 0.
        targets = apply("where", ignored, scalar(0, node.input(1).type.dtype), targets)
    picked = apply("gather", log_prob, apply("expand_dims", targets, axis=1), axis=1)
    loss = apply("negative", apply("squeeze", picked, axis=(1,)))
    weights = None
    if node.has_input(2):
        weights = apply("take", data_of(node, 2), targets, axis=0)
    if ignored is not None:
        kept = apply("cast", apply("logical_not", ignored), dtype=dtype)
        weights = kept if weights is None else apply("multiply", weights, kept)
    if weights is not None:
        loss = apply("multiply", loss, weights)
    if reduction == "none":
        return loss
    total = apply("sum", loss, axis=None, keepdims=False)
    if reduction == "sum":
        return total
    if weights is None:
        return apply("mean", loss, axis=None, keepdims=False)
    return apply("divide", total, apply("sum", weights, axis=None, keepdims=False))


def convert_nll_loss(node: OnnxNode) -> Result:
    """NegativeLogLikelihoodLoss: minus the input at each target class, weighted, reduced."""
    reduction = _check(node)
    return _nll(node, data_of(node, 0), reduction)


def convert_softmax_cross_entropy(node: OnnxNode) -> list[Result | None]:
    """SoftmaxCrossEntropyLoss: the NLL loss of log_softmax over the classes (axis 1), and
    log_softmax itself as the optional second output."""
    reduction = _check(node)
    log_prob = apply("nn.log_softmax", data_of(node, 0), axis=1)
    if isinstance(log_prob, np.ndarray):
        log_prob = log_prob.astype(node.input(0).type.dtype)
    loss = _nll(node, log_prob, reduction)
    return [loss, log_prob if node.output_used(1) else None]


TABLE: dict[str, tuple[Entry, ...]] = {
    # ignore_index and every reduction from the first opset (12); 13 adds bfloat16, 22 float8
    "NegativeLogLikelihoodLoss": every_opset(convert_nll_loss, first=12),
    "SoftmaxCrossEntropyLoss": every_opset(convert_softmax_cross_entropy, first=12),
}
