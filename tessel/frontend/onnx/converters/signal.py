"""Signal operators: the windows (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix,
whose outputs depend only on scalar inputs and so are computed at import (their sizes decide the
output shape), and DFT and STFT as products with a constant matrix of cosines and sines."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Expr
from tessel.graph.ty import TensorType


def _window_positions(node: OnnxNode) -> tuple[np.ndarray, int]:
    """The sample positions 0..size-1 and the period N (size for a periodic window, else size-1)."""
    size = int(node.static(0, "size").item())
    if size < 0:
        raise node.error(f"size {size} is negative")
    periodic = bool(node.attr("periodic", 1))
    return np.arange(size, dtype=np.float64), size if periodic else size - 1


def _window(node: OnnxNode, cosines: tuple[float, ...]) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k n / N): the generalized cosine window with coefficients a_k."""
    n, period = _window_positions(node)
    with np.errstate(divide="ignore", invalid="ignore"):  # a one-sample symmetric window: N = 0
        phase = 2 * np.pi * n / period
    window = sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(cosines))
    return np.asarray(window).astype(node.out_type().dtype)


def convert_hann_window(node: OnnxNode) -> np.ndarray:
    """HannWindow: 0.5 - 0.5 cos(2 pi n / N) (= sin^2(pi n / N))."""
    return _window(node, (0.5, 0.5))


def convert_hamming_window(node: OnnxNode) -> np.ndarray:
    """HammingWindow: 25/46 - 21/46 cos(2 pi n / N)."""
    return _window(node, (25 / 46, 21 / 46))


def convert_blackman_window(node: OnnxNode) -> np.ndarray:
    """BlackmanWindow: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _window(node, (0.42, 0.5, 0.08))


def _hertz_to_mel(hertz: float) -> float:
    return 2595 * math.log10(1 + hertz / 700)


def convert_mel_weight_matrix(node: OnnxNode) -> np.ndarray:
    """MelWeightMatrix: [dft_length // 2 + 1, num_mel_bins] triangles, one per mel bin, rising
    from its lower edge to its centre and falling to its upper edge, on spectrogram bins."""
    bins = int(node.static(0, "num_mel_bins").item())
    dft_length = int(node.static(1, "dft_length").item())
    sample_rate = int(node.static(2, "sample_rate").item())
    lower = float(node.static(3, "lower_edge_hertz").item())
    upper = float(node.static(4, "upper_edge_hertz").item())
    if bins <= 0 or dft_length <= 0 or sample_rate <= 0:
        raise node.error("num_mel_bins, dft_length and sample_rate must be positive")
    low_mel, high_mel = _hertz_to_mel(lower), _hertz_to_mel(upper)
    # bins + 2 points evenly spaced in mel (the spec divides by bins + 2, not bins + 1)
    step = (high_mel - low_mel) / (bins + 2)
    mels = np.arange(bins + 2) * step + low_mel
    hertz = 700 * (10 ** (mels / 2595) - 1)
    edges = np.floor((dft_length + 1) * hertz / sample_rate).astype(np.int64)
    weights = np.zeros((dft_length // 2 + 1, bins))
    for m in range(bins):
        left, centre, right = edges[m], edges[m + 1], edges[m + 2]
        if centre == left:
            weights[centre, m] = 1
        else:
            j = np.arange(left, centre + 1)
            weights[j, m] = (j - left) / (centre - left)
        if right > centre:
            j = np.arange(centre, right)
            weights[j, m] = (right - j) / (right - centre)
    return weights.astype(node.out_type().dtype)


def _dft_axis(node: OnnxNode, rank: int) -> int:
    """The signal axis: an attribute before opset 20, an input from 20 (default -2 there)."""
    if node.opset < 20:
        axis = int(node.attr("axis", 1))
    else:
        axis = int(node.static_or(2, "axis", np.array(-2)).item())
    axis = node.axis(axis, rank)
    if axis == rank - 1:
        raise node.error("the signal axis cannot be the last axis (it holds real and imaginary)")
    return axis


def _dft_matrices(length: int, out_length: int, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the DFT's angles: [length, out_length] for a signal of `length` samples."""
    n = np.arange(length)[:, None]
    k = np.arange(out_length)[None, :]
    angle = 2 * np.pi * ((n * k) % length) / length
    sign = 1.0 if inverse else -1.0
    return np.cos(angle), sign * np.sin(angle)


def _signal_parts(signal: Expr, real_input: bool, axis: int, rank: int) -> list[Expr]:
    """The real (and imaginary) part of `signal` ([..., n, ..., 1 or 2]) with the signal axis
    moved last and the complex axis dropped: [..., n] each."""
    perm = [a for a in range(rank - 1) if a != axis] + [axis]
    parts = []
    for part in (0,) if real_input else (0, 1):
        item = call(
            "strided_slice", signal, begin=(part,), end=(part + 1,), strides=(1,), axes=(rank - 1,)
        )
        item = call("squeeze", item, axis=(rank - 1,))
        parts.append(call("transpose", item, axes=tuple(perm)))
    return parts


def _times(x: Expr, matrix: np.ndarray, dtype: str) -> Expr:
    """x @ matrix, the matrix a constant of `dtype`."""
    return call("nn.matmul", x, const(matrix.astype(dtype)))


def _complex_result(parts: list[Expr], axis: int, rank: int) -> Expr:
    """The parts ([..., m] each, 1 or 2) stacked on a new last axis, the signal axis moved back
    to `axis`: [..., m, ..., 1 or 2]."""
    pair = [call("expand_dims", part, axis=rank - 1, num_newaxis=1) for part in parts]
    stacked = pair[0] if len(pair) == 1 else call("concatenate", tuple_of(pair), axis=rank - 1)
    back = list(range(rank - 2))
    back.insert(axis, rank - 2)
    return call("transpose", stacked, axes=(*back, rank - 1))


def _dft(
    signal: Expr,
    dtype: str,
    real_input: bool,
    axis: int,
    rank: int,
    length: int,
    out_length: int,
    inverse: bool,
) -> Expr:
    """The DFT of `signal` ([..., n, ..., 1 or 2]) along `axis` as products with constant
    matrices: (re + i im) (cos + i sin) = (re cos - im sin) + i (re sin + im cos)."""
    cos, sin = _dft_matrices(length, out_length, inverse)
    if inverse:
        cos, sin = cos / length, sin / length
    parts = _signal_parts(signal, real_input, axis, rank)
    real = _times(parts[0], cos, dtype)
    imag = _times(parts[0], sin, dtype)
    if not real_input:
        real = call("subtract", real, _times(parts[1], sin, dtype))
        imag = call("add", imag, _times(parts[1], cos, dtype))
    return _complex_result([real, imag], axis, rank)


def _irfft(signal: Expr, dtype: str, axis: int, rank: int, bins: int, length: int) -> Expr:
    """The inverse real FFT of the one-sided spectrum `signal` ([..., bins, ..., 2]), `length`
    real samples along `axis`. The full spectrum is Hermitian (X[n - k] = conj X[k]), so
    x[t] = 1/n sum_k w_k (re_k cos(2 pi k t / n) - im_k sin(2 pi k t / n)), w_k = 2 for the
    bins that stand for a mirrored pair too, 1 for k = 0 and k = n / 2 (n even). Their
    imaginary parts meet sin = 0 and drop, as numpy.fft.irfft and onnxruntime drop them."""
    k = np.arange(bins)[:, None]
    t = np.arange(length)[None, :]
    angle = 2 * np.pi * ((k * t) % length) / length
    weight = np.full((bins, 1), 2.0)
    weight[0] = 1.0
    if length % 2 == 0:
        weight[length // 2] = 1.0
    cos, sin = weight * np.cos(angle) / length, -weight * np.sin(angle) / length
    real, imag = _signal_parts(signal, False, axis, rank)
    result = call("add", _times(real, cos, dtype), _times(imag, sin, dtype))
    return _complex_result([result], axis, rank)


def _dft_length(node: OnnxNode, default: int) -> int:
    """Input 1 (dft_length), or `default` when omitted."""
    if not node.has_input(1):
        return default
    return int(node.static(1, "dft_length").item())


def _convert_irfft(node: OnnxNode, shape: tuple[int, ...], axis: int) -> Expr:
    """DFT with inverse=1 and onesided=1: the one-sided complex spectrum to the real signal."""
    rank, bins = len(shape), shape[axis]
    if shape[-1] != 2:
        raise node.error(
            "inverse with onesided=1 takes a complex (one-sided) spectrum, not a real signal"
        )
    length = _dft_length(node, 2 * (bins - 1))
    # With n // 2 + 1 bins the spectrum is exactly the one-sided half of an n-sample signal's,
    # where onnxruntime and ONNX's reference (numpy.fft.irfft) agree; for other lengths they
    # crop or pad the spectrum differently, so those are refused rather than guessed.
    if length < 1 or length // 2 + 1 != bins:
        raise node.error(
            f"dft_length {length} does not fit {bins} one-sided bins (it must be "
            f"{2 * (bins - 1)} or {2 * bins - 1}: padding and cropping the spectrum "
            "are not supported)"
        )
    dtype = node.out_type().dtype
    wide = call("cast", node.expr(0), dtype="float64")  # float64 sums, as for the DFT
    return call("cast", _irfft(wide, "float64", axis, rank, bins, length), dtype=dtype)


def convert_dft(node: OnnxNode) -> Expr:
    """DFT: forward or inverse, real or complex, full or one-sided (inverse: the inverse rfft)."""
    shape = node.shape(0)
    rank = len(shape)
    if shape[-1] not in (1, 2):
        raise node.error(f"the last axis must be 1 (real) or 2 (complex), not {shape[-1]}")
    axis = _dft_axis(node, rank)
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    if inverse and onesided:
        return _convert_irfft(node, shape, axis)
    length = shape[axis]
    dft_length = _dft_length(node, length)
    if dft_length != length:
        raise node.error(
            f"dft_length {dft_length} differs from the signal's {length} samples "
            "(padding and cropping the signal are not supported)"
        )
    out_length = length // 2 + 1 if onesided else length
    dtype = node.out_type().dtype
    # Sums of n products of cos/sin with the signal cancel to near zero for symmetric signals:
    # accumulated in float32 they miss ONNX's tolerance there, so they are done in float64.
    wide = call("cast", node.expr(0), dtype="float64")
    result = _dft(wide, "float64", shape[-1] == 1, axis, rank, length, out_length, inverse)
    return call("cast", result, dtype=dtype)


def _stft_frame_length(node: OnnxNode, length: int) -> int:
    """frame_length (input 3), else the window's length (input 2), else the signal's length;
    given both, they must agree."""
    window = None
    if node.has_input(2):
        if len(node.shape(2)) != 1:
            raise node.error(f"the window must be 1-D, got shape {list(node.shape(2))}")
        window = node.shape(2)[0]
    if not node.has_input(3):
        return window if window is not None else length
    frame = int(node.static(3, "frame_length").item())
    if window is not None and window != frame:
        raise node.error(f"the window has {window} samples but frame_length is {frame}")
    return frame


def convert_stft(node: OnnxNode) -> Value:
    """STFT: the DFT (in float64, as DFT) of each windowed frame of the signal."""
    # The frames are gathered by constant indices (frame_step apart). One-sided keeps
    # frame_length // 2 + 1 bins, of a complex signal too (the first bins of its full DFT, as
    # onnxruntime and ONNX's reference do).
    shape = node.shape(0)
    if len(shape) != 3 or shape[-1] not in (1, 2):
        raise node.error(f"the signal must be [batch, length, 1 or 2], got {list(shape)}")
    length = shape[1]
    step = int(node.static(1, "frame_step").item())
    frame = _stft_frame_length(node, length)
    if step < 1:
        raise node.error(f"frame_step {step} must be positive")
    if not 1 <= frame <= length:
        raise node.error(f"frame_length {frame} must be in [1, {length}] (the signal's length)")
    frames = (length - frame) // step + 1
    bins = frame // 2 + 1 if node.attr("onesided", 1) else frame
    indices = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
    wide = call("cast", node.expr(0), dtype="float64")
    framed = call("take", wide, const(indices), axis=1)  # [batch, frames, frame, 1 or 2]
    if node.has_input(2):
        window = call("cast", node.expr(2), dtype="float64")
        framed = call("multiply", framed, call("reshape", window, newshape=(1, 1, frame, 1)))
    result = _dft(framed, "float64", shape[-1] == 1, 2, 4, frame, bins, inverse=False)
    # Typed here: ONNX's inference gives no shape when frame_length is the signal's length.
    dtype = node.input(0).type.dtype
    return Value(call("cast", result, dtype=dtype), TensorType((shape[0], frames, bins, 2), dtype))


TABLE: dict[str, tuple[Entry, ...]] = {
    "HannWindow": every_opset(convert_hann_window, first=17),
    "HammingWindow": every_opset(convert_hamming_window, first=17),
    "BlackmanWindow": every_opset(convert_blackman_window, first=17),
    "MelWeightMatrix": every_opset(convert_mel_weight_matrix, first=17),
    # the axis is an attribute before 20 and an input from 20
    "DFT": every_opset(convert_dft, first=17),
    "STFT": every_opset(convert_stft, first=17),
}
