"""The recurrent-state layers of opset 27: LinearAttention (linear, gated, delta and
gated-delta updates of a per-head state, unrolled over the static sequence) and
CausalConvWithState (a depthwise causal convolution carrying its last k - 1 inputs)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.attention_common import (
    Operand,
    as_expr,
    concatenate,
    operand,
    reshaped,
    scalar,
    slice_axis,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.graph.expr import Expr

_RULES = ("linear", "gated", "delta", "gated_delta")
_INPUTS = ("query", "key", "value", "past_state", "decay", "beta")
_COMPUTE = "float32"  # the state accumulates in float32, as the spec's reference does


def _heads_first(node: OnnxNode, index: int, heads: int) -> Expr:
    """Input `index`, [B, T, heads * d], as [B, heads, T, d] in float32."""
    b, t, packed = node.shape(index)
    x = _f32(node.expr(index), node.input(index).type.dtype)
    split = reshaped(x, (b, t, heads, packed // heads))
    return call("transpose", split, axes=(0, 2, 1, 3))


def _f32(x: Expr, dtype: str) -> Expr:
    return x if dtype == _COMPUTE else call("cast", x, dtype=_COMPUTE)


def _is_zero(x: Operand) -> bool:
    return isinstance(x, np.ndarray) and not x.any()


def _step(x: Expr, t: int, shape: tuple[int, ...]) -> Expr:
    """Step t of a [B, H, T, d] tensor, as [B * H, 1, d]."""
    b, h, _, d = shape
    one = call("strided_slice", x, begin=(t,), end=(t + 1,), strides=(1,), axes=(2,))
    return reshaped(one, (b * h, 1, d))


def _check(node: OnnxNode) -> tuple[str, int, int]:
    """The update rule and the head counts; refuses inputs the rule does not take."""
    rule = node.attr("update_rule", "gated_delta")
    if rule not in _RULES:
        raise node.error(f"update_rule {rule!r} is not one of {list(_RULES)}")
    q_heads, kv_heads = node.attr("q_num_heads"), node.attr("kv_num_heads")
    if not q_heads or not kv_heads or q_heads <= 0 or kv_heads <= 0 or q_heads % kv_heads:
        raise node.error(
            f"q_num_heads={q_heads} must be a positive multiple of kv_num_heads={kv_heads}"
        )
    for index, needed in (
        (4, rule in ("gated", "gated_delta")),
        (5, rule in ("delta", "gated_delta")),
    ):
        if node.has_input(index) != needed:
            verb = "needs" if needed else "takes no"
            raise node.error(f"update_rule {rule!r} {verb} input `{_INPUTS[index]}`")
    for index in (0, 1, 2, 4, 5):
        if node.has_input(index) and node.input(index).type.ndim != 3:
            raise node.error(f"{_INPUTS[index]} must be 3-D, got shape {node.shape(index)}")
    return rule, int(q_heads), int(kv_heads)


def convert_linear_attention(node: OnnxNode) -> list[Expr]:
    """LinearAttention: per step, S = exp(g) S (gated); v = beta (v - S^T k) (delta);
    S += k v^T; o = scale q^T S, query heads grouped over the key/value heads."""
    rule, q_heads, kv_heads = _check(node)
    (b, t, q_packed), (_, _, v_packed) = node.shape(0), node.shape(2)
    d_k, d_v = q_packed // q_heads, v_packed // kv_heads
    if q_packed % q_heads or v_packed % kv_heads or node.shape(1)[2] != kv_heads * d_k:
        raise node.error(
            f"query {node.shape(0)}, key {node.shape(1)} and value "
            f"{node.shape(2)} do not split into {q_heads}/{kv_heads} "
            "heads"
        )
    group, dtype = q_heads // kv_heads, node.input(0).type.dtype
    q, k, v = (_heads_first(node, i, h) for i, h in ((0, q_heads), (1, kv_heads), (2, kv_heads)))
    decay = _decay(node, b, t, kv_heads, d_k) if node.has_input(4) else None
    beta = _beta(node, b, t, kv_heads) if node.has_input(5) else None
    state = _initial_state(node, (b, kv_heads, d_k, d_v))
    scale = float(node.attr("scale", 0.0)) or 1 / np.sqrt(d_k)
    width = 1 if decay is None or node.shape(4)[2] == kv_heads else d_k
    outputs = []
    for step in range(t):
        k_t, v_t = _step(k, step, (b, kv_heads, t, d_k)), _step(v, step, (b, kv_heads, t, d_v))
        if decay is not None and not _is_zero(state):
            # exp(g) over the key dimension: [B*H, 1, d_k or 1] -> [B*H, d_k or 1, 1]
            g_t = _step(decay, step, (b, kv_heads, t, width))
            factor = reshaped(call("exp", g_t), (b * kv_heads, width, 1))
            state = call("multiply", as_expr(state), factor)
        if beta is not None:
            rates = node.shape(5)[2]
            v_t = _delta(
                v_t, k_t, state, _step(beta, step, (b, rates, t, 1)), (b, kv_heads, rates, d_v)
            )
        outer = call("nn.batch_matmul", k_t, v_t, transpose_a=True, transpose_b=False)
        state = outer if _is_zero(state) else call("add", as_expr(state), outer)
        q_t = call("strided_slice", q, begin=(step,), end=(step + 1,), strides=(1,), axes=(2,))
        q_t = reshaped(q_t, (b * kv_heads, group, d_k))
        read = call("nn.batch_matmul", q_t, state, transpose_a=False, transpose_b=False)
        outputs.append(reshaped(read, (b, 1, q_heads * d_v)))
    out = call("multiply", as_expr(concatenate(outputs, axis=1)), const(scalar(scale, _COMPUTE)))
    present = reshaped(as_expr(state), (b, kv_heads, d_k, d_v))
    state_dtype = node.input(3).type.dtype if node.has_input(3) else dtype
    return [_cast(out, dtype), _cast(present, state_dtype)]


def _delta(
    v_t: Expr, k_t: Expr, state: Operand, beta_t: Expr, sizes: tuple[int, int, int, int]
) -> Expr:
    """beta (v - S^T k): the value corrected by what the state already holds for k."""
    b, heads, rates, d_v = sizes
    if _is_zero(state):
        corrected = v_t
    else:
        retrieved = call(
            "nn.batch_matmul", k_t, as_expr(state), transpose_a=False, transpose_b=False
        )
        corrected = call("subtract", v_t, retrieved)
    per_head = reshaped(corrected, (b, heads, 1, d_v))
    rate = reshaped(beta_t, (b, rates, 1, 1))  # one rate per head, or one for all
    return reshaped(call("multiply", rate, per_head), (b * heads, 1, d_v))


def _cast(x: Expr, dtype: str) -> Expr:
    return x if dtype == _COMPUTE else call("cast", x, dtype=dtype)


def _decay(node: OnnxNode, b: int, t: int, kv_heads: int, d_k: int) -> Expr:
    """decay as [B, H_kv, T, d_k or 1]."""
    if node.shape(4)[:2] != (b, t) or node.shape(4)[2] not in (kv_heads, kv_heads * d_k):
        raise node.error(
            f"decay has shape {node.shape(4)}; expected {(b, t, kv_heads)} or "
            f"{(b, t, kv_heads * d_k)}"
        )
    return _heads_first(node, 4, kv_heads)


def _beta(node: OnnxNode, b: int, t: int, kv_heads: int) -> Expr:
    """beta as [B, H_kv or 1, T, 1]."""
    if node.shape(5)[:2] != (b, t) or node.shape(5)[2] not in (kv_heads, 1):
        raise node.error(
            f"beta has shape {node.shape(5)}; expected {(b, t, kv_heads)} or {(b, t, 1)}"
        )
    return _heads_first(node, 5, node.shape(5)[2])


def _initial_state(node: OnnxNode, shape: tuple[int, ...]) -> Operand:
    """past_state as [B * H_kv, d_k, d_v] in float32 (zeros when omitted)."""
    b, h, d_k, d_v = shape
    if not node.has_input(3):
        return np.zeros((b * h, d_k, d_v), _COMPUTE)
    if node.shape(3) != shape:
        raise node.error(f"past_state has shape {node.shape(3)}, expected {shape}")
    return reshaped(_f32(node.expr(3), node.input(3).type.dtype), (b * h, d_k, d_v))


def convert_causal_conv_with_state(node: OnnxNode) -> list[Operand]:
    """CausalConvWithState: out[l] = bias + sum_j w[j] x'[l + j] over the input x' padded on
    the left by past_state (zeros when omitted); present_state is x'[-(k - 1):]."""
    shape, dtype = node.shape(0), node.input(0).type.dtype
    if len(shape) != 3 or len(node.shape(1)) != 3:
        raise node.error(f"input {shape} and weight {node.shape(1)} must be 3-D")
    batch, channels, length = shape
    k = node.shape(1)[2]
    if node.shape(1) != (channels, 1, k) or k < 1:
        raise node.error(f"weight has shape {node.shape(1)}, expected ({channels}, 1, k)")
    activation = node.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        raise node.error(f"activation {activation!r} is not one of 'none', 'silu', 'swish'")
    past = _past_window(node, batch, channels, k, dtype)
    padded = concatenate([past, operand(node.input(0))], axis=2) if k > 1 else node.expr(0)
    weight = operand(node.input(1))
    out = None
    for j in range(k):
        tap = reshaped(as_expr(slice_axis(weight, 2, j, j + 1)), (channels, 1))
        term = call("multiply", as_expr(slice_axis(padded, 2, j, j + length)), tap)
        out = term if out is None else call("add", out, term)
    if node.has_input(2):
        out = call("add", out, reshaped(node.expr(2), (channels, 1)))
    if activation != "none":  # silu: x * sigmoid(x)
        out = call("multiply", out, call("sigmoid", out))
    if k == 1:
        present = np.zeros((batch, channels, 0), dtype)
    else:
        present = slice_axis(padded, 2, length, length + k - 1)
    return [out, present]


def _past_window(node: OnnxNode, batch: int, channels: int, k: int, dtype: str) -> Operand:
    """past_state, or the zero padding of k - 1 positions."""
    if not node.has_input(3):
        return np.zeros((batch, channels, k - 1), dtype)
    if node.shape(3) != (batch, channels, k - 1):
        raise node.error(
            f"past_state has shape {node.shape(3)}, expected {(batch, channels, k - 1)}"
        )
    return operand(node.input(3))
