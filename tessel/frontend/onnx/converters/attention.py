"""Attention layers: Attention (opsets 23-25) and RotaryEmbedding (23), composed of batched
matrix products, softmax and elementwise operators; the recurrent layers (LSTM, GRU, RNN) come
from `recurrent`.

Attention follows the ONNX specification (and onnxruntime where the reference implementation
departs from it: `qk_matmul_output_mode=0` is the product before the soft cap). Masks that are
known at import (causal, sliding window, constant `attn_mask`) fold to one constant bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessel.frontend.onnx.converters.attention_common import (
    Operand,
    apply,
    as_expr,
    concatenate,
    operand,
    optional_operand,
    reshape,
    reshaped,
    scalar,
    slice_axis,
)
from tessel.frontend.onnx.converters.linear_attention import (
    convert_causal_conv_with_state,
    convert_linear_attention,
)
from tessel.frontend.onnx.converters.recurrent import convert_gru, convert_lstm, convert_rnn
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.graph.expr import Expr

# softmax_precision (an ONNX element type) -> dtype; a softmax in float16/bfloat16 is not
# computed (their tensors are, in float32: half.py).
_SOFTMAX_PRECISION = {1: "float32", 11: "float64"}
_INPUTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")


@dataclass(frozen=True)
class _Heads:
    """The sizes of one Attention node, after 3-D inputs are split into heads."""

    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    kv_len: int  # past + new keys
    head_size: int
    v_head_size: int
    past_len: int

    @property
    def group(self) -> int:
        """Query heads per key/value head (grouped-query attention)."""
        return self.q_heads // self.kv_heads


def _to_heads(x: Expr, shape: tuple[int, ...], heads: int) -> Expr:
    """[batch, seq, heads * size] as [batch, heads, seq, size]."""
    batch, seq, hidden = shape
    split = reshaped(x, (batch, seq, heads, hidden // heads))
    return call("transpose", split, axes=(0, 2, 1, 3))


def _head_count(node: OnnxNode, name: str, hidden: int, what: str) -> int:
    heads = node.attr(name)
    if heads is None or heads <= 0:
        raise node.error(f"3-D inputs need a positive `{name}` attribute")
    if hidden % heads:
        raise node.error(f"{what} hidden size {hidden} is not a multiple of {name}={heads}")
    return int(heads)


def _check_inputs(node: OnnxNode) -> None:
    """Refuse inputs the operator does not define."""
    ranks = {node.input(i).type.ndim for i in range(3)}
    if len(ranks) != 1 or ranks.pop() not in (3, 4):
        raise node.error(
            f"Q, K and V must all be 3-D or all 4-D, got shapes {[node.shape(i) for i in range(3)]}"
        )
    dtype = node.input(0).type.dtype
    for index in (1, 2, 4, 5):
        if node.has_input(index) and node.input(index).type.dtype != dtype:
            raise node.error(
                f"{_INPUTS[index]} has dtype {node.input(index).type.dtype} but Q has {dtype}"
            )
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise node.error(f"Q has dtype {dtype}; attention is defined for floating point")
    if node.has_input(4) != node.has_input(5):
        raise node.error("past_key and past_value must be given together")
    if node.has_input(6) and node.has_input(4):
        raise node.error("nonpad_kv_seqlen cannot be combined with past_key/past_value")


def _check_attributes(node: OnnxNode) -> None:
    """Refuse attribute values the operator does not define (or Tessel does not compute)."""
    mode = int(node.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise node.error(f"qk_matmul_output_mode={mode} is not one of 0, 1, 2, 3")
    precision = node.attr("softmax_precision")
    if precision is not None and int(precision) not in _SOFTMAX_PRECISION:
        raise node.error(
            f"softmax_precision={precision} is not supported (a softmax in "
            "float16 or bfloat16 arithmetic); Tessel computes softmax in float32 "
            "or float64"
        )
    for name in ("left_window_size", "right_window_size"):
        if int(node.attr(name, -1)) < -1:
            raise node.error(f"{name}={node.attr(name)} must be -1 or nonnegative")


# Q, K, V as [batch, heads, seq, size], and (batch, q_heads, kv_heads, q_len, kv_len, v_len,
# head_size, k_head_size, v_head_size) of the inputs (kv_len before the past cache).
_Split = tuple[Expr, Expr, Expr, tuple[int, ...]]


def _split_3d(node: OnnxNode) -> _Split:
    """3-D Q, K, V ([batch, seq, heads * size]) split into q_num_heads / kv_num_heads."""
    q, k, v = (node.input(i) for i in range(3))
    q_heads = _head_count(node, "q_num_heads", q.type.shape[2], "Q")
    kv_heads = _head_count(node, "kv_num_heads", k.type.shape[2], "K")
    if v.type.shape[2] % kv_heads:
        raise node.error(
            f"V hidden size {v.type.shape[2]} is not a multiple of kv_num_heads={kv_heads}"
        )
    q4 = _to_heads(q.expr, q.type.shape, q_heads)
    k4 = _to_heads(k.expr, k.type.shape, kv_heads)
    v4 = _to_heads(v.expr, v.type.shape, kv_heads)
    sizes = (q.type.shape[0], q_heads, kv_heads, q.type.shape[1], k.type.shape[1],
             v.type.shape[1], q.type.shape[2] // q_heads, k.type.shape[2] // kv_heads,
             v.type.shape[2] // kv_heads)  # fmt: skip
    return q4, k4, v4, sizes


def _split_4d(node: OnnxNode) -> _Split:
    """4-D Q, K, V, whose heads are their second axis."""
    q, k, v = (node.input(i) for i in range(3))
    batch, q_heads, q_len, head_size = q.type.shape
    _, kv_heads, kv_len, k_head_size = k.type.shape
    if v.type.shape[1] != kv_heads:
        raise node.error(f"K has {kv_heads} heads but V has {v.type.shape[1]}")
    for name, heads in (("q_num_heads", q_heads), ("kv_num_heads", kv_heads)):
        if node.attr(name) not in (None, heads):
            raise node.error(f"{name}={node.attr(name)} contradicts the 4-D inputs' {heads} heads")
    sizes = (batch, q_heads, kv_heads, q_len, kv_len, v.type.shape[2], head_size, k_head_size,
             v.type.shape[3])  # fmt: skip
    return q.expr, k.expr, v.expr, sizes


def _qkv(node: OnnxNode) -> tuple[Expr, Expr, Expr, _Heads]:
    """Q, K, V as [batch, heads, seq, size] (K and V after the past cache) and their sizes."""
    q4, k4, v4, sizes = (_split_3d if node.input(0).type.ndim == 3 else _split_4d)(node)
    batch, q_heads, kv_heads, q_len, kv_len, v_len, head_size, k_head_size, v_head_size = sizes
    if k_head_size != head_size:
        raise node.error(f"Q has head size {head_size} but K has {k_head_size}")
    if v_len != kv_len:
        raise node.error(f"K has {kv_len} positions but V has {v_len}")
    if q_heads % kv_heads:
        raise node.error(f"q_num_heads={q_heads} is not a multiple of kv_num_heads={kv_heads}")
    past_len = node.shape(4)[2] if node.has_input(4) else 0
    heads = _Heads(
        batch, q_heads, kv_heads, q_len, past_len + kv_len, head_size, v_head_size, past_len
    )
    if node.has_input(4):
        k4, v4 = _with_past(node, k4, v4, heads)
    return q4, k4, v4, heads


def _with_past(node: OnnxNode, k4: Expr, v4: Expr, heads: _Heads) -> tuple[Expr, Expr]:
    """K and V after past_key and past_value (the present outputs)."""
    past_k, past_v = node.shape(4), node.shape(5)
    h = heads
    if past_k != (h.batch, h.kv_heads, h.past_len, h.head_size) or past_v != (
        h.batch,
        h.kv_heads,
        h.past_len,
        h.v_head_size,
    ):
        raise node.error(
            f"past_key {past_k} / past_value {past_v} do not match K and V "
            f"(batch {h.batch}, {h.kv_heads} heads)"
        )
    k4 = call("concatenate", tuple_of([node.expr(4), k4]), axis=2)
    v4 = call("concatenate", tuple_of([node.expr(5), v4]), axis=2)
    return k4, v4


def _scale_factor(node: OnnxNode, heads: _Heads, dtype: str) -> np.ndarray:
    """sqrt(scale), in the inputs' dtype: Q and K are each scaled by it (as the spec's
    function body does, against overflow)."""
    scale = node.attr("scale")
    scale = 1 / np.sqrt(heads.head_size) if scale is None else float(scale)
    return scalar(np.sqrt(scale), dtype)


def _scores(q4: Expr, k4: Expr, heads: _Heads, factor: np.ndarray) -> Expr:
    """(Q * s) @ (K * s)^T as [batch, q_heads, q_len, kv_len]. Grouped query heads share their
    key head: the group's queries are rows of one product, no key is repeated."""
    h = heads
    q = call("multiply", q4, const(factor))
    k = call("multiply", k4, const(factor))
    q3 = reshaped(q, (h.batch * h.kv_heads, h.group * h.q_len, h.head_size))
    k3 = reshaped(k, (h.batch * h.kv_heads, h.kv_len, h.head_size))
    qk = call("nn.batch_matmul", q3, k3, transpose_a=False, transpose_b=True)
    return reshaped(qk, (h.batch, h.q_heads, h.q_len, h.kv_len))


def _mask(node: OnnxNode, heads: _Heads, dtype: str) -> tuple[Operand | None, Operand | None]:
    """attn_mask as (allowed: bool, additive: float), each None when absent; a mask shorter
    than the keys is padded with False / -inf, as the spec says."""
    if not node.has_input(3):
        return None, None
    mask, shape = operand(node.input(3)), node.shape(3)
    mask_dtype = node.input(3).type.dtype
    if mask_dtype not in ("bool", dtype):
        raise node.error(f"attn_mask has dtype {mask_dtype}; it must be bool or Q's {dtype}")
    if not shape or shape[-1] > heads.kv_len:
        raise node.error(f"attn_mask of shape {shape} does not fit {heads.kv_len} keys")
    if shape[-1] < heads.kv_len:
        fill = False if mask_dtype == "bool" else -np.inf
        pad = np.full((*shape[:-1], heads.kv_len - shape[-1]), fill, dtype=mask_dtype)
        mask = concatenate([mask, pad], axis=len(shape) - 1)
    return (mask, None) if mask_dtype == "bool" else (None, mask)


def _frontier(node: OnnxNode, heads: _Heads) -> tuple[Operand, np.ndarray]:
    """(n, t): query i may see key j up to the causal frontier iff t[i, j] <= n, where
    t = j - i + q_len and n = offset + q_len: one number for the past cache or no cache,
    [batch, 1, 1, 1] from nonpad_kv_seqlen (an external cache, offset per batch)."""
    i = np.arange(heads.q_len, dtype=np.int64)[:, None]
    j = np.arange(heads.kv_len, dtype=np.int64)[None, :]
    t = j - i + heads.q_len
    if node.has_input(6):
        return reshape(_nonpad(node, heads), (heads.batch, 1, 1, 1)), t
    return scalar(heads.past_len + heads.q_len, "int64"), t


def _nonpad(node: OnnxNode, heads: _Heads) -> Operand:
    value = node.input(6)
    if value.type.shape != (heads.batch,) or value.type.dtype != "int64":
        raise node.error(
            f"nonpad_kv_seqlen must be int64 of shape ({heads.batch},), got "
            f"{value.type.dtype} {value.type.shape}"
        )
    return operand(value)


def _and(a: Operand | None, b: Operand | None) -> Operand | None:
    if a is None or b is None:
        return b if a is None else a
    return apply("logical_and", a, b)


def _allowed(node: OnnxNode, heads: _Heads, mask: Operand | None) -> Operand | None:
    """Which keys each query may attend: attn_mask (bool), is_causal, the sliding window
    (opset 25) and nonpad_kv_seqlen, combined; None when nothing restricts."""
    allowed = mask
    left, right = int(node.attr("left_window_size", -1)), int(node.attr("right_window_size", -1))
    if node.attr("is_causal", 0) or left >= 0 or right >= 0:
        n, t = _frontier(node, heads)
        if node.attr("is_causal", 0):
            allowed = _and(allowed, apply("less_equal", t, n))  # j <= i + offset
        if left >= 0:  # i + offset - j <= left
            allowed = _and(allowed, apply("less_equal", n, t + left))
        if right >= 0:  # j - (i + offset) <= right
            allowed = _and(allowed, apply("less_equal", t - right, n))
    if node.has_input(6):
        keys = np.arange(heads.kv_len, dtype=np.int64)
        lengths = reshape(_nonpad(node, heads), (heads.batch, 1, 1, 1))
        allowed = _and(allowed, apply("less", keys, lengths))
    return allowed


def _bias(node: OnnxNode, heads: _Heads, dtype: str) -> Operand | None:
    """The additive bias of the scores: the float mask where allowed, -inf elsewhere."""
    allowed, additive = _mask(node, heads, dtype)
    allowed = _allowed(node, heads, allowed)
    if allowed is None:
        return additive
    kept = scalar(0, dtype) if additive is None else additive
    return apply("where", allowed, kept, scalar(-np.inf, dtype))


def _softmax(node: OnnxNode, scores: Expr, bias: Operand | None, dtype: str) -> Expr:
    """softmax(scores) over the keys, in softmax_precision's dtype, with fully-masked rows
    zero (not NaN) and the result in `dtype`."""
    precision = node.attr("softmax_precision")
    wide = dtype if precision is None else _SOFTMAX_PRECISION[int(precision)]
    if wide != dtype:
        scores = call("cast", scores, dtype=wide)
    probs = call("nn.softmax", scores, axis=-1)
    if bias is not None:
        rows = _masked_rows(bias, dtype)
        if rows is not None:
            probs = call("where", as_expr(rows), const(scalar(0, wide)), probs)
    if wide != dtype:
        probs = call("cast", probs, dtype=dtype)
    return probs


def _masked_rows(bias: Operand, dtype: str) -> Operand | None:
    """Rows of the bias that are -inf everywhere (no key attended: their output is zero), or
    None when the bias is known at import and no row is."""
    if isinstance(bias, np.ndarray):
        rows = np.isneginf(np.max(bias, axis=-1, keepdims=True))
        return rows if rows.any() else None
    row_max = call("max", bias, axis=(-1,), keepdims=True)
    return call("equal", row_max, const(scalar(-np.inf, dtype)))


def _softcap(node: OnnxNode, scores: Expr, dtype: str) -> Expr:
    """softcap * tanh(scores / softcap) for a positive softcap (the spec's default 0 is off)."""
    cap = float(node.attr("softcap", 0.0))
    if cap <= 0:
        return scores
    cap_value = const(scalar(cap, dtype))
    return call("multiply", call("tanh", call("divide", scores, cap_value)), cap_value)


def _weighted_values(probs: Expr, v4: Expr, heads: _Heads) -> Expr:
    """probs @ V as [batch, q_heads, q_len, v_head_size], grouped query heads sharing V."""
    h = heads
    p3 = reshaped(probs, (h.batch * h.kv_heads, h.group * h.q_len, h.kv_len))
    v3 = reshaped(v4, (h.batch * h.kv_heads, h.kv_len, h.v_head_size))
    out = call("nn.batch_matmul", p3, v3, transpose_a=False, transpose_b=False)
    return reshaped(out, (h.batch, h.q_heads, h.q_len, h.v_head_size))


def convert_attention(node: OnnxNode) -> list[Expr | None]:
    """Attention: softmax((Q s)(K s)^T capped + bias) V with s = sqrt(scale), over grouped
    heads; outputs Y, present_key, present_value and the chosen qk_matmul_output."""
    _check_inputs(node)
    _check_attributes(node)
    dtype = node.input(0).type.dtype
    q4, k4, v4, heads = _qkv(node)
    if 0 in (heads.kv_len, heads.head_size):
        raise node.error(
            f"empty keys or heads (kv length {heads.kv_len}, head size "
            f"{heads.head_size}) are not supported"
        )
    raw = _scores(q4, k4, heads, _scale_factor(node, heads, dtype))
    capped = _softcap(node, raw, dtype)
    bias = _bias(node, heads, dtype)
    scores = capped if bias is None else call("add", capped, as_expr(bias))
    probs = _softmax(node, scores, bias, dtype)
    y = _weighted_values(probs, v4, heads)
    if node.input(0).type.ndim == 3:
        y = call("transpose", y, axes=(0, 2, 1, 3))
        y = reshaped(y, (heads.batch, heads.q_len, heads.q_heads * heads.v_head_size))
    mode = int(node.attr("qk_matmul_output_mode", 0))
    qk_output = (raw, capped, scores, probs)[mode] if node.output_used(3) else None
    return [y, k4, v4, qk_output]


def convert_rotary_embedding(node: OnnxNode) -> Expr:
    """RotaryEmbedding: the first rotary_embedding_dim features of each head rotated by the
    cached cos/sin of the token's position (halves, or interleaved pairs)."""
    x, shape, dtype = node.expr(0), node.shape(0), node.input(0).type.dtype
    if len(shape) == 4:
        batch, heads, seq, head_size = shape
        layout = (batch, heads, seq, head_size)
    elif len(shape) == 3:
        batch, seq, hidden = shape
        heads = _head_count(node, "num_heads", hidden, "input")
        head_size = hidden // heads
        layout = (batch, seq, heads, head_size)
        x = reshaped(x, layout)
    else:
        raise node.error(f"input must be 3-D or 4-D, got shape {shape}")
    rotary = int(node.attr("rotary_embedding_dim", 0)) or head_size
    if rotary > head_size or rotary % 2:
        raise node.error(
            f"rotary_embedding_dim={rotary} must be even and at most the head size {head_size}"
        )
    half = rotary // 2
    cos, sin = (_cache(node, index, batch, seq, half, len(shape)) for index in (1, 2))
    if node.input(1).type.dtype != dtype or node.input(2).type.dtype != dtype:
        raise node.error("cos_cache and sin_cache must have the input's dtype")
    rotated = _rotate(x, cos, sin, rotary, bool(node.attr("interleaved", 0)), layout)
    if rotary < head_size:
        rotated = concatenate([rotated, slice_axis(x, 3, rotary, head_size)], axis=3)
    return reshaped(rotated, shape) if len(shape) == 3 else rotated


def _cache(node: OnnxNode, index: int, batch: int, seq: int, half: int, rank: int) -> Operand:
    """The cos or sin values of each token, shaped to broadcast over the heads."""
    name = ("cos_cache", "sin_cache")[index - 1]
    cache = operand(node.input(index))
    if node.has_input(3):
        if node.shape(3) != (batch, seq):
            raise node.error(f"position_ids has shape {node.shape(3)}, expected {(batch, seq)}")
        if node.input(index).type.ndim != 2:
            raise node.error(f"{name} must be 2-D with position_ids")
        cache = apply("take", cache, optional_operand(node, 3), axis=0, mode="clip")
    elif node.shape(index) != (batch, seq, node.shape(index)[-1]):
        raise node.error(
            f"{name} has shape {node.shape(index)}; without position_ids it "
            f"must be {(batch, seq, half)}"
        )
    if node.shape(index)[-1] != half:
        raise node.error(
            f"{name} has {node.shape(index)[-1]} values per position, expected "
            f"rotary_embedding_dim / 2 = {half}"
        )
    # [batch, seq, half] against x as [batch, heads, seq, .] (4-D) or [batch, seq, heads, .]
    return reshape(cache, (batch, 1, seq, half) if rank == 4 else (batch, seq, 1, half))


def _rotate(
    x: Expr, cos: Operand, sin: Operand, rotary: int, interleaved: bool, layout: tuple[int, ...]
) -> Expr:
    """The rotated features: (x1 cos - x2 sin, x1 sin + x2 cos) of the pairs (x1, x2)."""
    half = rotary // 2
    if interleaved:
        x1, x2 = slice_axis(x, 3, 0, rotary, 2), slice_axis(x, 3, 1, rotary, 2)
    else:
        x1, x2 = slice_axis(x, 3, 0, half), slice_axis(x, 3, half, rotary)
    cos, sin = as_expr(cos), as_expr(sin)
    real = call("subtract", call("multiply", cos, x1), call("multiply", sin, x2))
    imag = call("add", call("multiply", sin, x1), call("multiply", cos, x2))
    if not interleaved:
        return concatenate([real, imag], axis=3)
    pairs = concatenate(
        [call("expand_dims", real, axis=4), call("expand_dims", imag, axis=4)], axis=4
    )
    return reshaped(pairs, (*layout[:3], rotary))


TABLE: dict[str, tuple[Entry, ...]] = {
    # attention
    "Attention": every_opset(convert_attention, first=23),  # 24: nonpad_kv_seqlen, 25: windows
    "RotaryEmbedding": every_opset(convert_rotary_embedding, first=23),
    "LinearAttention": every_opset(convert_linear_attention, first=27),
    "CausalConvWithState": every_opset(convert_causal_conv_with_state, first=27),
    # recurrent layers
    "LSTM": every_opset(convert_lstm),
    "GRU": every_opset(convert_gru),
    "RNN": every_opset(convert_rnn),
}
