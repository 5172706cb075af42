"""Recurrent layers: LSTM, GRU and RNN, unrolled over their static sequence length.

The input projection of every step is one nn.dense over the whole sequence; each step adds the
recurrent projection (nn.dense of the previous hidden state) and applies the gates. With
`sequence_lens`, a step past a sequence's end keeps its state and outputs zeros (onnxruntime's
rule); a reverse direction then starts at each sequence's own last element.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tessel.frontend.onnx.converters.attention_common import (
    Operand,
    apply,
    as_expr,
    concatenate,
    operand,
    reshape,
    reshaped,
    scalar,
    slice_axis,
    transpose,
)
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.graph.expr import Expr

# Activation -> (default alpha, default beta): None where the function takes none, NaN where it
# must be given (onnxruntime's defaults for these differ from the ONNX operators').
_GIVEN = float("nan")
_ACTIVATIONS: dict[str, tuple[float | None, float | None]] = {
    "relu": (None, None),
    "tanh": (None, None),
    "sigmoid": (None, None),
    "softsign": (None, None),
    "softplus": (None, None),
    "affine": (_GIVEN, _GIVEN),
    "leakyrelu": (0.01, None),
    "thresholdedrelu": (_GIVEN, None),
    "scaledtanh": (_GIVEN, _GIVEN),
    "hardsigmoid": (0.2, 0.5),
    "elu": (1.0, None),
}


@dataclass(frozen=True)
class _Layer:
    """The sizes and settings of one recurrent node (sequence-first layout)."""

    seq: int
    batch: int
    hidden: int
    directions: int
    dtype: str
    clip: float | None
    lengths: Operand | None  # sequence_lens as [batch, 1] when a sequence is shorter than `seq`
    lengths_dtype: str


Activation = Callable[[Expr], Expr]


def _activation(
    node: OnnxNode, name: str, alpha: float | None, beta: float | None, dtype: str
) -> Activation:
    """The activation function called `name` (ONNX's list, any case) with its alpha/beta."""
    key = name.lower()
    if key not in _ACTIVATIONS:
        raise node.error(f"activation {name!r} is not one of ONNX's {sorted(_ACTIVATIONS)}")
    default_alpha, default_beta = _ACTIVATIONS[key]
    for what, value, default in (("alpha", alpha, default_alpha), ("beta", beta, default_beta)):
        if value is None and default is not None and np.isnan(default):
            raise node.error(
                f"activation {name} needs an explicit activation_{what}",
                hint="onnxruntime's default differs from the ONNX operator's",
            )
    a = None if default_alpha is None else scalar(default_alpha if alpha is None else alpha, dtype)
    b = None if default_beta is None else scalar(default_beta if beta is None else beta, dtype)
    return lambda x: _apply_activation(key, x, a, b, dtype)


def _apply_activation(
    key: str, x: Expr, a: np.ndarray | None, b: np.ndarray | None, dtype: str
) -> Expr:
    one, zero = const(scalar(1, dtype)), const(scalar(0, dtype))
    if key in ("tanh", "sigmoid"):
        return call(key, x)
    if key == "relu":
        return call("nn.relu", x)
    if key == "softsign":  # x / (1 + |x|)
        return call("divide", x, call("add", one, call("abs", x)))
    if key == "softplus":  # log(1 + exp(x)), as max(x, 0) + log(1 + exp(-|x|)) against overflow
        tail = call("log", call("add", one, call("exp", call("negative", call("abs", x)))))
        return call("add", call("maximum", x, zero), tail)
    if key == "affine":
        return call("add", call("multiply", x, const(a)), const(b))
    if key == "leakyrelu":
        return call("nn.leaky_relu", x, alpha=float(a))
    if key == "thresholdedrelu":
        return call("where", call("greater", x, const(a)), x, zero)
    if key == "scaledtanh":
        return call("multiply", const(a), call("tanh", call("multiply", x, const(b))))
    if key == "hardsigmoid":
        scaled = call("add", call("multiply", x, const(a)), const(b))
        return call("clip", scaled, a_min=0.0, a_max=1.0)
    # elu: x for x >= 0, alpha (exp(x) - 1) below
    negative = call("multiply", const(a), call("subtract", call("exp", x), one))
    return call("where", call("less", x, zero), negative, x)


def _activations(
    node: OnnxNode, defaults: tuple[str, ...], layer: _Layer
) -> list[list[Activation]]:
    """Each direction's activation functions. activation_alpha and activation_beta are
    consumed in order by the functions that take them (onnxruntime's reading of the spec);
    a missing value takes the ONNX operator's default."""
    count = len(defaults) * layer.directions
    names = list(node.attr("activations") or defaults * layer.directions)
    if len(names) != count:
        raise node.error(
            f"activations lists {len(names)} functions; {count} expected "
            f"({len(defaults)} per direction)"
        )
    alphas = list(node.attr("activation_alpha") or [])
    betas = list(node.attr("activation_beta") or [])
    functions = []
    for name in names:
        default_alpha, default_beta = _ACTIVATIONS.get(name.lower(), (None, None))
        alpha = alphas.pop(0) if default_alpha is not None and alphas else None
        beta = betas.pop(0) if default_beta is not None and betas else None
        functions.append(_activation(node, name, alpha, beta, layer.dtype))
    per = len(defaults)
    return [functions[d * per : (d + 1) * per] for d in range(layer.directions)]


def _layer(node: OnnxNode, gates: int) -> tuple[_Layer, Expr]:
    """The node's sizes and settings, and X as [seq, batch, input]."""
    x = node.input(0)
    if x.type.ndim != 3:
        raise node.error(f"X must be 3-D, got shape {x.type.shape}")
    layout = int(node.attr("layout", 0))
    if layout not in (0, 1):
        raise node.error(f"layout={layout} is not 0 or 1")
    seq, batch, _ = (x.type.shape[1], x.type.shape[0], 0) if layout else x.type.shape
    x_seq = call("transpose", x.expr, axes=(1, 0, 2)) if layout else x.expr
    direction = node.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise node.error(f"direction {direction!r} is not forward, reverse or bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    w_shape, r_shape = node.shape(1), node.shape(2)
    hidden = r_shape[-1] if len(r_shape) == 3 else 0
    if node.attr("hidden_size") is not None and int(node.attr("hidden_size")) != hidden:
        raise node.error(f"hidden_size={node.attr('hidden_size')} but R has shape {r_shape}")
    if w_shape != (directions, gates * hidden, x.type.shape[2]) or r_shape != (
        directions,
        gates * hidden,
        hidden,
    ):
        raise node.error(
            f"W {w_shape} and R {r_shape} do not fit {directions} direction(s), "
            f"{gates} gates and input size {x.type.shape[2]}"
        )
    if 0 in (seq, batch, hidden):
        raise node.error(
            f"empty sequence, batch or hidden size ({seq}, {batch}, {hidden}) is not supported"
        )
    if not np.issubdtype(np.dtype(x.type.dtype), np.floating):
        raise node.error(f"X has dtype {x.type.dtype}; recurrent layers are floating point")
    clip = node.attr("clip")
    lengths = _lengths(node, seq, batch)
    lengths_dtype = node.input(4).type.dtype if node.has_input(4) else "int32"
    return _Layer(
        seq,
        batch,
        hidden,
        directions,
        x.type.dtype,
        None if clip is None else float(clip),
        lengths,
        lengths_dtype,
    ), x_seq


def _lengths(node: OnnxNode, seq: int, batch: int) -> Operand | None:
    """sequence_lens as [batch, 1], or None when every sequence is `seq` long."""
    if not node.has_input(4):
        return None
    value = node.input(4)
    if value.type.shape != (batch,):
        raise node.error(f"sequence_lens has shape {value.type.shape}, expected ({batch},)")
    if value.is_constant and (value.data == seq).all():
        return None
    if value.is_constant and ((value.data < 0) | (value.data > seq)).any():
        raise node.error(f"sequence_lens {value.data.tolist()} is outside [0, {seq}]")
    return reshape(operand(value), (batch, 1))


def _per_direction(node: OnnxNode, index: int, direction: int, shape: tuple[int, ...]) -> Operand:
    """Input `index` ([directions, ...]) for one direction, reshaped to `shape`."""
    return reshape(slice_axis(operand(node.input(index)), 0, direction, direction + 1), shape)


def _initial(node: OnnxNode, index: int, direction: int, layer: _Layer) -> Operand:
    """initial_h / initial_c of one direction as [batch, hidden] (zeros when omitted)."""
    shape = (layer.batch, layer.hidden)
    if not node.has_input(index):
        return np.zeros(shape, layer.dtype)
    axis = 1 if int(node.attr("layout", 0)) else 0
    expected = [layer.directions, layer.batch, layer.hidden]
    if axis:
        expected[:2] = expected[1::-1]
    if node.shape(index) != tuple(expected):
        raise node.error(f"input {index} has shape {node.shape(index)}, expected {expected}")
    return reshape(slice_axis(operand(node.input(index)), axis, direction, direction + 1), shape)


def _biases(node: OnnxNode, direction: int, size: int, dtype: str) -> tuple[Operand, Operand]:
    """(Wb, Rb) of one direction, each [size] (zeros when B is omitted)."""
    if not node.has_input(3):
        zeros = np.zeros((size,), dtype)
        return zeros, zeros
    if node.shape(3)[1:] != (2 * size,):
        raise node.error(f"B has shape {node.shape(3)}, expected [directions, {2 * size}]")
    both = _per_direction(node, 3, direction, (2 * size,))
    return slice_axis(both, 0, 0, size), slice_axis(both, 0, size, 2 * size)


def _input_projection(
    x_seq: Expr, weight: Operand, bias: Operand, layer: _Layer, width: int, size: int
) -> Expr:
    """X W^T + bias for every step at once, as [seq, batch, width] (X of `size` features)."""
    flat = reshaped(x_seq, (layer.seq * layer.batch, size))
    projected = call("nn.dense", flat, as_expr(weight), units=width)
    projected = call("add", projected, as_expr(bias))
    return reshaped(projected, (layer.seq, layer.batch, width))


def _step_input(projected: Expr, t: int, layer: _Layer, width: int) -> Expr:
    """Step t of the input projection, [batch, width]."""
    step = call("strided_slice", projected, begin=(t,), end=(t + 1,), strides=(1,), axes=(0,))
    return reshaped(step, (layer.batch, width))


def _gate(x: Expr, index: int, hidden: int) -> Expr:
    """Gate `index` of a [batch, gates * hidden] product."""
    return call(
        "strided_slice",
        x,
        begin=(index * hidden,),
        end=((index + 1) * hidden,),
        strides=(1,),
        axes=(1,),
    )


def _clipped(x: Expr, layer: _Layer) -> Expr:
    """The input of an activation, clipped to [-clip, clip] when clip is set."""
    if layer.clip is None:
        return x
    return call("clip", x, a_min=-layer.clip, a_max=layer.clip)


def _order(layer: _Layer, reverse: bool) -> range:
    return range(layer.seq - 1, -1, -1) if reverse else range(layer.seq)


def _valid(layer: _Layer, t: int) -> Operand | None:
    """[batch, 1] bool: which sequences have step t (None when all do)."""
    if layer.lengths is None:
        return None
    valid = apply("less", scalar(t, layer.lengths_dtype), layer.lengths)
    if isinstance(valid, np.ndarray) and valid.all():
        return None
    return valid


def _keep(valid: Operand | None, new: Expr, old: Operand) -> Expr:
    """The new state where the step is valid, the old state elsewhere."""
    return new if valid is None else call("where", as_expr(valid), new, as_expr(old))


def _emitted(valid: Operand | None, h: Expr, layer: _Layer) -> Expr:
    """The output of a step: h, or zeros past a sequence's end."""
    if valid is None:
        return h
    return call("where", as_expr(valid), h, const(scalar(0, layer.dtype)))


def _recurrent(h: Operand, weight: Operand, width: int) -> Expr | None:
    """h R^T, [batch, width]; None while h is the zero initial state (exactly zero)."""
    if isinstance(h, np.ndarray) and not h.any():
        return None
    return call("nn.dense", as_expr(h), as_expr(weight), units=width)


def _plus(x: Expr, y: Expr | None) -> Expr:
    return x if y is None else call("add", x, y)


def _mul(a: Operand, b: Operand) -> Expr:
    return call("multiply", as_expr(a), as_expr(b))


@dataclass
class _Run:
    """One direction's results: its outputs by step (in time order) and its final states."""

    outputs: list[Expr]
    h: Expr
    c: Expr | None = None


def _lstm_direction(
    node: OnnxNode, layer: _Layer, x_seq: Expr, d: int, reverse: bool, acts: list[Activation]
) -> _Run:
    """One direction of an LSTM (gates i, o, f, c; peepholes P[i, o, f])."""
    n, hidden = layer.hidden, 4 * layer.hidden
    size = node.shape(0)[2]
    w, r = _per_direction(node, 1, d, (hidden, size)), _per_direction(node, 2, d, (hidden, n))
    wb, rb = _biases(node, d, hidden, layer.dtype)
    projected = _input_projection(x_seq, w, apply("add", wb, rb), layer, hidden, size)
    peep = _per_direction(node, 7, d, (3 * n,)) if node.has_input(7) else None
    if peep is not None and node.shape(7) != (layer.directions, 3 * n):
        raise node.error(f"P has shape {node.shape(7)}, expected {(layer.directions, 3 * n)}")
    p_i, p_o, p_f = (
        (slice_axis(peep, 0, k * n, (k + 1) * n) for k in range(3))
        if peep is not None
        else (None, None, None)
    )
    f, g, h_act = acts
    h, c = _initial(node, 5, d, layer), _initial(node, 6, d, layer)
    outputs: list[Expr] = [None] * layer.seq  # type: ignore[list-item]  # filled below
    for t in _order(layer, reverse):
        gates = _plus(_step_input(projected, t, layer, hidden), _recurrent(h, r, hidden))
        i, o, fg, cell = (_gate(gates, k, n) for k in range(4))
        if peep is not None:
            i, fg = call("add", i, _mul(p_i, c)), call("add", fg, _mul(p_f, c))
        i = f(_clipped(i, layer))
        if node.attr("input_forget", 0):
            fg = call("subtract", const(scalar(1, layer.dtype)), i)
        else:
            fg = f(_clipped(fg, layer))
        c_new = call("add", _mul(fg, c), _mul(i, g(_clipped(cell, layer))))
        if peep is not None:
            o = call("add", o, _mul(p_o, c_new))
        h_new = _mul(f(_clipped(o, layer)), h_act(c_new))
        valid = _valid(layer, t)
        outputs[t] = _emitted(valid, h_new, layer)
        h, c = _keep(valid, h_new, h), _keep(valid, c_new, c)
    return _Run(outputs, as_expr(h), as_expr(c))


def _gru_direction(
    node: OnnxNode, layer: _Layer, x_seq: Expr, d: int, reverse: bool, acts: list[Activation]
) -> _Run:
    """One direction of a GRU (gates z, r, h; linear_before_reset applies r after R_h)."""
    n, hidden = layer.hidden, 3 * layer.hidden
    size = node.shape(0)[2]
    w, r = _per_direction(node, 1, d, (hidden, size)), _per_direction(node, 2, d, (hidden, n))
    r_zr, r_h = slice_axis(r, 0, 0, 2 * n), slice_axis(r, 0, 2 * n, hidden)
    wb, rb = _biases(node, d, hidden, layer.dtype)
    before_reset = bool(node.attr("linear_before_reset", 0))
    rb_h = slice_axis(rb, 0, 2 * n, hidden)
    # R_h's bias joins the input projection unless the reset gate multiplies it.
    kept = (
        concatenate([slice_axis(rb, 0, 0, 2 * n), np.zeros((n,), layer.dtype)], axis=0)
        if before_reset
        else rb
    )
    projected = _input_projection(x_seq, w, apply("add", wb, kept), layer, hidden, size)
    f, g = acts
    h = _initial(node, 5, d, layer)
    outputs: list[Expr] = [None] * layer.seq  # type: ignore[list-item]  # filled below
    for t in _order(layer, reverse):
        x_t = _step_input(projected, t, layer, hidden)
        zr = _plus(_gate(x_t, 0, 2 * n), _recurrent(h, r_zr, 2 * n))
        z, reset = f(_clipped(_gate(zr, 0, n), layer)), f(_clipped(_gate(zr, 1, n), layer))
        if before_reset:
            h_part = _plus(as_expr(rb_h), _recurrent(h, r_h, n))
            h_part = _mul(reset, h_part)
        else:
            h_part = _recurrent(_reset_state(reset, h), r_h, n)
        h_tilde = g(_clipped(_plus(_gate(x_t, 2, n), h_part), layer))
        one = const(scalar(1, layer.dtype))
        h_new = call("add", _mul(call("subtract", one, z), h_tilde), _mul(z, h))
        valid = _valid(layer, t)
        outputs[t] = _emitted(valid, h_new, layer)
        h = _keep(valid, h_new, h)
    return _Run(outputs, as_expr(h))


def _reset_state(reset: Expr, h: Operand) -> Operand:
    """r * h; the zero initial state stays a known zero."""
    if isinstance(h, np.ndarray) and not h.any():
        return h
    return _mul(reset, h)


def _rnn_direction(
    node: OnnxNode, layer: _Layer, x_seq: Expr, d: int, reverse: bool, acts: list[Activation]
) -> _Run:
    """One direction of a simple RNN: h = f(x W^T + h R^T + Wb + Rb)."""
    n = layer.hidden
    size = node.shape(0)[2]
    w, r = _per_direction(node, 1, d, (n, size)), _per_direction(node, 2, d, (n, n))
    wb, rb = _biases(node, d, n, layer.dtype)
    projected = _input_projection(x_seq, w, apply("add", wb, rb), layer, n, size)
    (f,) = acts
    h = _initial(node, 5, d, layer)
    outputs: list[Expr] = [None] * layer.seq  # type: ignore[list-item]  # filled below
    for t in _order(layer, reverse):
        h_new = f(_clipped(_plus(_step_input(projected, t, layer, n), _recurrent(h, r, n)), layer))
        valid = _valid(layer, t)
        outputs[t] = _emitted(valid, h_new, layer)
        h = _keep(valid, h_new, h)
    return _Run(outputs, as_expr(h))


def _outputs(node: OnnxNode, layer: _Layer, runs: list[_Run]) -> list[Expr | None]:
    """Y [seq, directions, batch, hidden], Y_h and Y_c [directions, batch, hidden] (batch
    first with layout=1); None for outputs no one reads."""
    layout = int(node.attr("layout", 0))
    b, n = layer.batch, layer.hidden
    y = None
    if node.output_used(0):
        per_direction = [
            concatenate([reshaped(o, (1, 1, b, n)) for o in run.outputs], axis=0) for run in runs
        ]
        y = concatenate(per_direction, axis=1)
        y = transpose(y, (2, 0, 1, 3)) if layout else y

    def final(states: list[Expr]) -> Expr:
        joined = concatenate([reshaped(s, (1, b, n)) for s in states], axis=0)
        return transpose(joined, (1, 0, 2)) if layout else joined

    y_h = final([run.h for run in runs]) if node.output_used(1) else None
    y_c = final([run.c for run in runs]) if runs[0].c is not None and node.output_used(2) else None
    return [y, y_h, y_c]


def _convert(node: OnnxNode, gates: int, defaults: tuple[str, ...], direction_fn) -> list:
    layer, x_seq = _layer(node, gates)
    acts = _activations(node, defaults, layer)
    direction = node.attr("direction", "forward")
    reverses = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    runs = [direction_fn(node, layer, x_seq, d, rev, acts[d]) for d, rev in enumerate(reverses)]
    return _outputs(node, layer, runs)


def convert_lstm(node: OnnxNode) -> list[Expr | None]:
    """LSTM: Y, Y_h, Y_c (activations f, g, h: Sigmoid, Tanh, Tanh by default)."""
    return _convert(node, 4, ("Sigmoid", "Tanh", "Tanh"), _lstm_direction)


def convert_gru(node: OnnxNode) -> list[Expr | None]:
    """GRU: Y, Y_h (activations f, g: Sigmoid, Tanh by default)."""
    return _convert(node, 3, ("Sigmoid", "Tanh"), _gru_direction)


def convert_rnn(node: OnnxNode) -> list[Expr | None]:
    """RNN: Y, Y_h (activation f: Tanh by default)."""
    return _convert(node, 1, ("Tanh",), _rnn_direction)
