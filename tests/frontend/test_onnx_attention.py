"""The ONNX importer's attention and matrix-product converters against onnxruntime: Attention
(opsets 23-25), RotaryEmbedding, and the MatMul/Gemm regressions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import (
    check_against_onnxruntime,
    make_model,
    random_inputs,
    single_op_model,
    tensor,
)

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.errors import OnnxImportError
from tessel.graph.executor import compile as compile_graph

BOOL = TensorProto.BOOL


def _attention(inputs, outputs=("Y",), opset=23, **attrs):
    """One Attention node; `inputs` are (name, shape, elem type) with "" for omitted inputs."""
    node = helper.make_node("Attention", [name for name, _, _ in inputs], list(outputs), **attrs)
    declared = [tensor(name, shape, elem) for name, shape, elem in inputs if name]
    results = [helper.make_empty_tensor_value_info(o) for o in outputs if o]
    return make_model([node], declared, results, opset=opset)


def _qkv(q=(2, 3, 4, 8), k=(2, 3, 6, 8), v=(2, 3, 6, 8)):
    return [("Q", q, TensorProto.FLOAT), ("K", k, TensorProto.FLOAT), ("V", v, TensorProto.FLOAT)]


def test_attention_4d_grouped_query_heads_causal_with_softcap_compiled():
    model = _attention(_qkv(q=(2, 6, 4, 8)), is_causal=1, softcap=2.0)
    check_against_onnxruntime(model, compiled=True, rtol=1e-5)


def test_attention_3d_with_past_cache_float_mask_and_every_output():
    inputs = [("Q", (2, 4, 12), 1), ("K", (2, 3, 12), 1), ("V", (2, 3, 6), 1),
              ("attn_mask", (4, 5), 1), ("past_key", (2, 3, 2, 4), 1),
              ("past_value", (2, 3, 2, 2), 1)]  # fmt: skip
    outputs = ("Y", "present_key", "present_value", "qk")
    for mode in (0, 1, 2, 3):
        model = _attention(
            inputs, outputs, q_num_heads=3, kv_num_heads=3, softcap=1.5, qk_matmul_output_mode=mode
        )
        check_against_onnxruntime(model, rtol=1e-5)


def test_attention_fully_masked_rows_are_zero_and_a_short_mask_is_padded():
    # Row 0 allows no key: its output is zero, not NaN. The mask covers 4 of 6 keys (the rest
    # are masked, as the spec says; onnxruntime refuses such a mask, ONNX's reference runs it).
    mask = np.array([[False] * 4, [True, False, True, False], [True] * 4, [False, True] * 2])
    model = _attention(
        [*_qkv(q=(1, 2, 4, 8), k=(1, 2, 6, 8), v=(1, 2, 6, 8)), ("attn_mask", (4, 4), BOOL)],
        ("Y", "", "", "qk"),
        qk_matmul_output_mode=3,
    )
    inputs = {**random_inputs(model), "attn_mask": mask}
    mod, _ = from_onnx(model)
    y, probs = compile_graph(mod, {})(**inputs)
    expected = ReferenceEvaluator(model).run(None, inputs)
    assert not np.isnan(y).any()
    assert (y[:, :, 0] == 0).all()
    np.testing.assert_allclose(y, expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probs, expected[1], rtol=1e-5, atol=1e-6)


def test_attention_nonpad_kv_seqlen_causal_external_cache():
    inputs = [*_qkv(q=(2, 2, 3, 8), k=(2, 2, 6, 8), v=(2, 2, 6, 8)),
              ("attn_mask", (2, 1, 3, 6), BOOL), ("", None, 0), ("", None, 0),
              ("nonpad_kv_seqlen", (2,), TensorProto.INT64)]  # fmt: skip
    model = _attention(inputs, opset=24, is_causal=1)
    values = random_inputs(model)
    values["attn_mask"] = np.ones((2, 1, 3, 6), bool)
    values["nonpad_kv_seqlen"] = np.array([4, 6], np.int64)
    check_against_onnxruntime(model, inputs=values, compiled=True, rtol=1e-5)


def test_attention_sliding_window_with_past_cache():
    inputs = [*_qkv(q=(1, 2, 3, 4), k=(1, 2, 2, 4), v=(1, 2, 2, 4)), ("", None, 0),
              ("past_key", (1, 2, 4, 4), 1), ("past_value", (1, 2, 4, 4), 1)]  # fmt: skip
    model = _attention(
        inputs, ("Y", "present_key", "present_value"), opset=25, is_causal=1, left_window_size=2
    )
    check_against_onnxruntime(model, rtol=1e-5)


def test_attention_refuses_what_it_cannot_compute():
    model = _attention(_qkv(), softmax_precision=TensorProto.FLOAT16)
    with pytest.raises(OnnxImportError, match="softmax_precision"):
        from_onnx(model)
    model = _attention(_qkv(q=(2, 4, 4, 8)))  # 4 query heads over 3 key heads
    with pytest.raises(OnnxImportError, match="not a multiple"):
        from_onnx(model)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_partial_with_position_ids(interleaved):
    node = helper.make_node(
        "RotaryEmbedding",
        ["x", "cos", "sin", "pos"],
        ["y"],
        interleaved=interleaved,
        rotary_embedding_dim=4,
    )
    inputs = [tensor("x", (2, 4, 3, 8)), tensor("cos", (10, 2)), tensor("sin", (10, 2)),
              tensor("pos", (2, 3), TensorProto.INT64)]  # fmt: skip
    model = make_model([node], inputs, [helper.make_empty_tensor_value_info("y")], opset=23)
    check_against_onnxruntime(model, compiled=bool(interleaved), rtol=1e-5)


def test_rotary_embedding_3d_without_position_ids():
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], num_heads=2)
    inputs = [tensor("x", (2, 3, 8)), tensor("cos", (2, 3, 2)), tensor("sin", (2, 3, 2))]
    model = make_model([node], inputs, [helper.make_empty_tensor_value_info("y")], opset=23)
    check_against_onnxruntime(model, rtol=1e-5)


@pytest.mark.parametrize("rule", ["linear", "gated_delta"])
def test_linear_attention_grouped_heads_with_past_state(rule):
    names = ["q", "k", "v", "state", "decay" if rule == "gated_delta" else "",
             "beta" if rule == "gated_delta" else ""]  # fmt: skip
    node = helper.make_node(
        "LinearAttention", names, ["y", "present"], q_num_heads=4, kv_num_heads=2, update_rule=rule
    )
    inputs = [tensor("q", (2, 3, 16)), tensor("k", (2, 3, 8)), tensor("v", (2, 3, 6)),
              tensor("state", (2, 2, 4, 3))]  # fmt: skip
    if rule == "gated_delta":  # per-head decay (log space) and update rate
        inputs += [tensor("decay", (2, 3, 2)), tensor("beta", (2, 3, 1))]
    outputs = [helper.make_empty_tensor_value_info(o) for o in ("y", "present")]
    model = make_model([node], inputs, outputs, opset=27)
    values = random_inputs(model)
    if rule == "gated_delta":
        values["decay"] = -np.abs(values["decay"])
        values["beta"] = 1 / (1 + np.exp(-values["beta"]))
    check_against_onnxruntime(model, inputs=values, compiled=rule == "gated_delta", rtol=1e-5)


def test_causal_conv_with_state_silu_and_a_short_input():
    node = helper.make_node(
        "CausalConvWithState", ["x", "w", "b", "past"], ["y", "present"], activation="silu"
    )
    inputs = [tensor("x", (2, 3, 2)), tensor("w", (3, 1, 4)), tensor("b", (3,)),
              tensor("past", (2, 3, 3))]  # fmt: skip
    outputs = [helper.make_empty_tensor_value_info(o) for o in ("y", "present")]
    model = make_model([node], inputs, outputs, opset=27)
    check_against_onnxruntime(model, compiled=True, rtol=1e-5)


def test_gemm_of_constants_without_c_folds():
    # Regression: all-constant inputs without C raised IndexError.
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((4, 3), np.float32)
    model = single_op_model(
        "Gemm", {}, initializers={"a": a, "b": b}, opset=13, transB=1, alpha=2.0
    )
    mod, _ = from_onnx(model)
    np.testing.assert_array_equal(mod["main"].body.data, 2 * a @ b.T)


def test_matmul_over_an_empty_axis_is_zero():
    # Regression: the compiled product summed no element and returned uninitialised memory.
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    model = make_model(
        [node],
        [tensor("a", (2, 2, 0)), tensor("b", (2, 0, 3))],
        [helper.make_empty_tensor_value_info("y")],
        opset=13,
    )
    check_against_onnxruntime(model, compiled=True)


def test_gemm_over_an_empty_axis_is_beta_c():
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=0.5)
    model = make_model(
        [node],
        [tensor("a", (2, 0)), tensor("b", (0, 3)), tensor("c", (3,))],
        [helper.make_empty_tensor_value_info("y")],
        opset=13,
    )
    check_against_onnxruntime(model, compiled=True)


def test_integer_matmul_with_a_vector():
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    model = make_model(
        [node],
        [tensor("a", (2, 2, 3), TensorProto.INT32), tensor("b", (3,), TensorProto.INT32)],
        [helper.make_empty_tensor_value_info("y")],
        opset=13,
    )
    check_against_onnxruntime(model, compiled=True)


def test_integer_gemm_with_a_fractional_alpha_is_refused():
    node = helper.make_node("Gemm", ["a", "b"], ["y"], alpha=0.5)
    model = make_model(
        [node],
        [tensor("a", (2, 3), TensorProto.INT32), tensor("b", (3, 4), TensorProto.INT32)],
        [helper.make_empty_tensor_value_info("y")],
        opset=13,
    )
    with pytest.raises(OnnxImportError, match="whole numbers"):
        from_onnx(model)
