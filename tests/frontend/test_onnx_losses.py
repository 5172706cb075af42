"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against onnxruntime: every reduction,
class weights, ignore_index (also outside [0, C)), and the log_prob output."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import check_against_onnxruntime, make_model

from tessel.frontend.onnx import OnnxImportError, from_onnx


def _loss_model(op, shape, weight=False, outputs=1, **attrs):
    """One loss node over scores `shape` [N, C, ...] and int64 targets [N, ...]."""
    names = ["scores", "targets"] + (["weight"] if weight else [])
    out_names = ["loss", "log_prob"][:outputs]
    node = helper.make_node(op, names, out_names, **attrs)
    inputs = [
        helper.make_tensor_value_info("scores", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("targets", TensorProto.INT64, [shape[0], *shape[2:]]),
    ]
    if weight:
        inputs.append(helper.make_tensor_value_info("weight", TensorProto.FLOAT, [shape[1]]))
    return make_model(
        [node], inputs, [helper.make_empty_tensor_value_info(n) for n in out_names], opset=13
    )


def _inputs(shape, ignore_index=None, weight=False, seed=0):
    rng = np.random.default_rng(seed)
    values = {
        "scores": rng.standard_normal(shape).astype(np.float32),
        "targets": rng.integers(0, shape[1], [shape[0], *shape[2:]]).astype(np.int64),
    }
    if ignore_index is not None:
        values["targets"].reshape(-1)[::3] = ignore_index
    if weight:
        values["weight"] = rng.uniform(0.5, 2, shape[1]).astype(np.float32)
    return values


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize(("weight", "ignore_index"), [(False, None), (True, 1), (True, -5)])
def test_nll_loss_matches_onnxruntime(reduction, weight, ignore_index):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    model = _loss_model("NegativeLogLikelihoodLoss", [3, 4, 2], weight, **attrs)
    check_against_onnxruntime(
        model,
        inputs=_inputs([3, 4, 2], ignore_index, weight),
        compiled=reduction == "mean" and weight,
    )


def test_nll_loss_mean_without_weights_skips_ignored_targets():
    model = _loss_model("NegativeLogLikelihoodLoss", [4, 3], ignore_index=2)
    check_against_onnxruntime(model, inputs=_inputs([4, 3], 2), compiled=True)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_with_log_prob_matches_onnxruntime(reduction):
    model = _loss_model(
        "SoftmaxCrossEntropyLoss",
        [2, 5, 3, 2],
        weight=True,
        outputs=2,
        reduction=reduction,
        ignore_index=0,
    )
    check_against_onnxruntime(model, inputs=_inputs([2, 5, 3, 2], 0, True), compiled=True)


def test_softmax_cross_entropy_without_log_prob_output():
    model = _loss_model("SoftmaxCrossEntropyLoss", [3, 4], reduction="sum")
    check_against_onnxruntime(model, inputs=_inputs([3, 4]))


def test_loss_of_mismatched_targets_is_refused():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["scores", "targets"], ["loss"])
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("targets", TensorProto.INT64, [3]),
        ],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    )
    model.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 2  # checked after the checker
    with pytest.raises(OnnxImportError):
        from_onnx(model)
