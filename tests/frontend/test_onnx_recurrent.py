"""The ONNX importer's recurrent layers (LSTM, GRU, RNN) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import check_against_onnxruntime, make_model, random_inputs, tensor

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.errors import OnnxImportError
from tessel.graph.executor import compile as compile_graph

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _model(
    op,
    seq=3,
    batch=2,
    size=3,
    hidden=4,
    direction="forward",
    layout=0,
    initial=False,
    peepholes=False,
    lengths=False,
    **attrs,
):
    """One recurrent node reading every input from the graph; all its outputs."""
    directions, gates = (2 if direction == "bidirectional" else 1), GATES[op]
    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    state = (batch, directions, hidden) if layout else (directions, batch, hidden)
    inputs = [tensor("X", x_shape), tensor("W", (directions, gates * hidden, size)),
              tensor("R", (directions, gates * hidden, hidden)),
              tensor("B", (directions, 2 * gates * hidden))]  # fmt: skip
    names = ["X", "W", "R", "B", "L" if lengths else ""]
    if lengths:
        inputs.append(tensor("L", (batch,), TensorProto.INT32))
    states = ["h0", "c0"] if op == "LSTM" else ["h0"]
    names += states if initial else [""] * len(states)
    inputs += [tensor(s, state) for s in states] if initial else []
    if peepholes:
        names.append("P")
        inputs.append(tensor("P", (directions, 3 * hidden)))
    outputs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    node = helper.make_node(
        op,
        names,
        outputs,
        hidden_size=hidden,
        direction=direction,
        **({"layout": 1} if layout else {}),
        **attrs,
    )
    results = [helper.make_empty_tensor_value_info(o) for o in outputs]
    return make_model([node], inputs, results, opset=14)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_bidirectional_with_initial_state_and_sequence_lengths_compiled(op):
    model = _model(op, direction="bidirectional", initial=True, lengths=True)
    inputs = {**random_inputs(model), "L": np.array([3, 1], np.int32)}
    check_against_onnxruntime(model, inputs=inputs, compiled=True, rtol=1e-5)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_reverse_with_clip_and_activations(op):
    activations = {
        "LSTM": ["HardSigmoid", "Elu", "Softsign"],
        "GRU": ["Sigmoid", "LeakyRelu"],
        "RNN": ["ScaledTanh"],
    }[op]
    model = _model(
        op,
        direction="reverse",
        clip=0.7,
        activations=activations,
        activation_alpha=[0.3, 0.9],
        activation_beta=[0.6],
    )
    check_against_onnxruntime(model, rtol=1e-5)


def test_gru_linear_before_reset():
    model = _model("GRU", initial=True, linear_before_reset=1)
    check_against_onnxruntime(model, rtol=1e-5)


def test_lstm_peepholes_and_coupled_input_forget_gates():
    model = _model("LSTM", initial=True, peepholes=True, input_forget=1)
    check_against_onnxruntime(model, rtol=1e-5)


def test_batch_first_layout_against_the_onnx_reference():
    # onnxruntime refuses layout=1; ONNX's reference implementation runs it.
    model = _model("LSTM", layout=1, initial=True, direction="bidirectional")
    inputs = random_inputs(model)
    mod, _ = from_onnx(model)
    ours = compile_graph(mod, {})(**inputs)
    for got, expected in zip(ours, ReferenceEvaluator(model).run(None, inputs), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_an_activation_whose_default_is_ambiguous_must_be_given_its_alpha():
    model = _model("RNN", activations=["Affine"])
    with pytest.raises(OnnxImportError, match="Affine needs an explicit activation_alpha"):
        from_onnx(model)
