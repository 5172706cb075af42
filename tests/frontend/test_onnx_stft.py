"""STFT and the inverse real FFT (DFT with inverse=1, onesided=1) against NumPy's FFT in
float64 and against onnxruntime, compiled to C; and the clean refusals of invalid inputs."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_testing import check_against_onnxruntime, make_model, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.support.errors import UserError


def _constant(name, value):
    array = numpy_helper.from_array(np.asarray(value))
    return helper.make_node("Constant", [], [name], value=array)


def _stft_model(shape, step, frame_length=None, window=None, window_input=False, out=None, **attrs):
    """STFT of graph input x; frame_length a constant, window a constant or a graph input."""
    nodes, inputs, names = [_constant("step", np.int64(step))], [tensor("x", list(shape))], ["x"]
    names += [
        "step",
        "window" if window is not None or window_input else "",
        "length" if frame_length is not None else "",
    ]
    if window_input:
        inputs.append(tensor("window", [window]))
    elif window is not None:
        nodes.append(_constant("window", np.asarray(window, np.float32)))
    if frame_length is not None:
        nodes.append(_constant("length", np.int64(frame_length)))
    nodes.append(helper.make_node("STFT", names, ["y"], **attrs))
    # ONNX 1.23's inference ignores onesided's default (1): the output's shape is given here.
    return make_model(nodes, inputs, [tensor("y", out)], opset=17)


def _numpy_stft(x, step, length, window=None, onesided=True):
    """[batch, frames, bins, 2] by numpy.fft.fft of each windowed frame, in float64."""
    signal = x[..., 0].astype(np.float64) + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    frames = (signal.shape[1] - length) // step + 1
    starts = np.arange(frames) * step
    framed = np.stack([signal[:, s : s + length] for s in starts], axis=1)
    if window is not None:
        framed = framed * window
    spectrum = np.fft.fft(framed, axis=-1)[..., : length // 2 + 1 if onesided else length]
    return np.stack([spectrum.real, spectrum.imag], axis=-1)


def _run(model, **inputs):
    mod, params = from_onnx(model)
    return compile_graph(mod, params)(**inputs)


STFT_CASES = {
    # (signal shape, step, frame_length, window, onesided)
    "frame_length": ((2, 40, 1), 6, 12, None, 1),
    "odd_frame_full": ((1, 33, 1), 5, 9, None, 0),
    "window_sets_the_length": ((2, 30, 1), 4, None, np.hanning(10), 1),
    "window_and_length": ((1, 64, 1), 16, 16, np.hamming(16), 0),
    "complex_full": ((2, 25, 2), 3, 8, None, 0),
    "complex_onesided": ((1, 25, 2), 7, 8, np.blackman(8), 1),  # the first bins of the full DFT
}


def _bins(length, onesided):
    return length // 2 + 1 if onesided else length


@pytest.mark.parametrize("case", STFT_CASES)
def test_stft_matches_numpy_and_onnxruntime(case):
    shape, step, length, window, onesided = STFT_CASES[case]
    frame = length if length is not None else len(window)
    out = [shape[0], (shape[1] - frame) // step + 1, _bins(frame, onesided), 2]
    model = _stft_model(shape, step, length, window, out=out, onesided=onesided)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = _numpy_stft(x, step, frame, window, bool(onesided))
    np.testing.assert_allclose(_run(model, x=x), expected, atol=2e-5 * np.abs(expected).max())
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


def test_stft_onesided_by_default_with_a_window_given_at_run_time():
    model = _stft_model((1, 50, 1), 5, 10, window=10, window_input=True, out=[1, 9, 6, 2])
    rng = np.random.default_rng(1)
    x, window = rng.standard_normal((1, 50, 1)).astype(np.float32), rng.random(10, np.float32)
    expected = _numpy_stft(x, 5, 10, window)
    np.testing.assert_allclose(_run(model, x=x, window=window), expected, atol=1e-4)
    check_against_onnxruntime(model, inputs={"x": x, "window": window}, compiled=True)


def test_stft_without_window_or_frame_length_is_one_frame_of_the_whole_signal():
    # The spec's default (onnxruntime refuses this form): frame_length = signal_length.
    model = _stft_model((2, 12, 1), 3, out=[2, 1, 7, 2])
    x = np.random.default_rng(2).standard_normal((2, 12, 1)).astype(np.float32)
    np.testing.assert_allclose(_run(model, x=x), _numpy_stft(x, 3, 12), atol=1e-5)


def test_stft_of_float16_is_computed_wide():
    shape = (1, 32, 1)
    model = make_model(
        [
            _constant("step", np.int64(4)),
            _constant("length", np.int64(8)),
            helper.make_node("STFT", ["x", "step", "", "length"], ["y"]),
        ],
        [tensor("x", list(shape), TensorProto.FLOAT16)],
        [tensor("y", [1, 7, 5, 2], TensorProto.FLOAT16)],
        opset=17,
    )
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float16)
    result = _run(model, x=x)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, _numpy_stft(x, 4, 8), atol=1e-2)


@pytest.mark.parametrize(
    ("shape", "step", "length", "window", "message"),
    [
        ((1, 20, 1), 0, 8, None, "frame_step 0"),
        ((1, 20, 1), 2, 30, None, "frame_length 30"),
        ((1, 20, 3), 2, 8, None, "1 or 2"),
        ((1, 20, 1), 2, 8, np.ones((2, 4)), "rank = 1"),  # ONNX's inference refuses it
    ],
)
def test_invalid_stft_is_refused_naming_the_node(shape, step, length, window, message):
    nodes = [_constant("step", np.int64(step)), _constant("length", np.int64(length))]
    names = ["x", "step", "", "length"]
    if window is not None:
        nodes.append(_constant("window", np.asarray(window, np.float32)))
        names[2] = "window"
    nodes.append(helper.make_node("STFT", names, ["y"]))
    graph = helper.make_graph(nodes, "g", [tensor("x", list(shape))], [tensor("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UserError, match=f"STFT node .*{message}"):
        from_onnx(model)


def test_stft_window_and_frame_length_must_agree():
    model = helper.make_model(
        helper.make_graph(
            [
                _constant("step", np.int64(2)),
                _constant("length", np.int64(8)),
                _constant("window", np.ones(6, np.float32)),
                helper.make_node("STFT", ["x", "step", "window", "length"], ["y"]),
            ],
            "g",
            [tensor("x", [1, 20, 1])],
            [tensor("y", None)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    with pytest.raises(UserError, match="STFT"):
        from_onnx(model)


def _irfft_model(shape, opset=20, axis=1, dft_length=None, checked=True):
    """DFT(inverse=1, onesided=1) of graph input x: axis an attribute before 20, an input from."""
    nodes, names, attrs = [], ["x", ""], dict(inverse=1, onesided=1)
    if dft_length is not None:
        nodes.append(_constant("n", np.int64(dft_length)))
        names[1] = "n"
    if opset >= 20:
        nodes.append(_constant("axis", np.int64(axis)))
        names.append("axis")
    else:
        attrs["axis"] = axis
    nodes.append(helper.make_node("DFT", names, ["y"], **attrs))
    if not checked:  # a model ONNX's checker would refuse, built as it is
        graph = helper.make_graph(nodes, "g", [tensor("x", list(shape))], [tensor("y", None)])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return make_model(nodes, [tensor("x", list(shape))], [tensor("y", None)], opset=opset)


@pytest.mark.parametrize(
    ("shape", "axis", "dft_length", "opset"),
    [
        ((2, 6, 3, 2), 1, None, 20),  # 10 samples (the default, 2 * (bins - 1))
        ((2, 6, 3, 2), 1, 11, 20),  # odd: 11 samples from 6 bins
        ((3, 5, 2), -2, 8, 20),
        ((4, 7, 2), 0, None, 17),  # axis as attribute
        ((2, 1, 5, 2), 1, 1, 19),  # one bin, one sample
    ],
)
def test_irfft_matches_numpy_and_onnxruntime(shape, axis, dft_length, opset):
    model = _irfft_model(shape, opset, axis, dft_length)
    rng = np.random.default_rng(4)
    # Random imaginary parts at DC and Nyquist too: the inverse real FFT ignores them.
    x = rng.standard_normal(shape).astype(np.float32)
    spectrum = x[..., 0].astype(np.float64) + 1j * x[..., 1]
    axis %= len(shape)
    bins = shape[axis]
    expected = np.fft.irfft(spectrum, n=dft_length or 2 * (bins - 1), axis=axis)[..., None]
    result = _run(model, x=x)
    np.testing.assert_allclose(result, expected, atol=1e-6 * max(1, np.abs(expected).max()))
    if bins > 1:  # onnxruntime fails a one-bin spectrum
        check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


@pytest.mark.parametrize(
    ("shape", "dft_length", "message"),
    [
        ((2, 6, 1), None, "complex"),  # ONNX's inference refuses it
        ((2, 6, 2), 14, "dft_length 14"),  # would pad the spectrum
        ((2, 6, 2), 9, "dft_length 9"),  # would crop it
        ((2, 1, 2), None, "dft_length 0"),
    ],
)
def test_irfft_refuses_real_input_and_lengths_that_do_not_fit(shape, dft_length, message):
    with pytest.raises(OnnxImportError, match=f"DFT node .*{message}"):
        from_onnx(_irfft_model(shape, dft_length=dft_length, checked=False))
