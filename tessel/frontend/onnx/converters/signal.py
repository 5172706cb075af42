"""Signal operators: the windows (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix,
whose outputs depend only on scalar inputs and so are computed at import (their sizes decide the
output shape), and DFT and STFT as products with a constant matrix of cosines and sines."""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.graph.expr import Expr


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


def _dft(signal: Expr, dtype: str, real_input: bool, axis: int, rank: int, length: int,
         out_length: int, inverse: bool) -> Expr:  # fmt: skip
    """The DFT of `signal` ([..., n, ..., 1 or 2]) along `axis` as products with constant
    matrices: (re + i im) (cos + i sin) = (re cos - im sin) + i (re sin + im cos)."""
    cos, sin = _dft_matrices(length, out_length, inverse)
    scale = 1.0 / length if inverse else 1.0
    # Move the signal axis last, drop the complex axis: [..., n].
    perm = [a for a in range(rank - 1) if a != axis] + [axis]
    parts = []
    for part in (0,) if real_input else (0, 1):
        item = call("strided_slice", signal, begin=(part,), end=(part + 1,), strides=(1,),
                    axes=(rank - 1,))  # fmt: skip
        item = call("squeeze", item, axis=(rank - 1,))
        parts.append(call("transpose", item, axes=tuple(perm)))

    def times(x: Expr, matrix: np.ndarray) -> Expr:
        return call("nn.matmul", x, const((matrix * scale).astype(dtype)))

    real = times(parts[0], cos)
    imag = times(parts[0], sin)
    if not real_input:
        real = call("subtract", real, times(parts[1], sin))
        imag = call("add", imag, times(parts[1], cos))
    pair = [call("expand_dims", part, axis=rank - 1, num_newaxis=1) for part in (real, imag)]
    stacked = call("concatenate", tuple_of(pair), axis=rank - 1)
    back = list(range(rank - 2))
    back.insert(axis, rank - 2)
    return call("transpose", stacked, axes=(*back, rank - 1))


def convert_dft(node: OnnxNode) -> Expr:
    """DFT: forward or inverse, of a real or complex signal, one-sided (onesided=1) or full."""
    shape = node.shape(0)
    rank = len(shape)
    if shape[-1] not in (1, 2):
        raise node.error(f"the last axis must be 1 (real) or 2 (complex), not {shape[-1]}")
    axis = _dft_axis(node, rank)
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    if inverse and onesided:
        raise node.error("inverse with onesided=1 is not supported")
    length = shape[axis]
    if node.has_input(1):
        dft_length = int(node.static(1, "dft_length").item())
        if dft_length != length:
            raise node.error(f"dft_length {dft_length} differs from the signal's {length} samples "
                             "(padding and cropping the signal are not supported)")  # fmt: skip
    out_length = length // 2 + 1 if onesided else length
    dtype = node.out_type().dtype
    # Sums of n products of cos/sin with the signal cancel to near zero for symmetric signals:
    # accumulated in float32 they miss ONNX's tolerance there, so they are done in float64.
    wide = call("cast", node.expr(0), dtype="float64")
    result = _dft(wide, "float64", shape[-1] == 1, axis, rank, length, out_length, inverse)
    return call("cast", result, dtype=dtype)


TABLE: dict[str, tuple[Entry, ...]] = {
    "HannWindow": every_opset(convert_hann_window, first=17),
    "HammingWindow": every_opset(convert_hamming_window, first=17),
    "BlackmanWindow": every_opset(convert_blackman_window, first=17),
    "MelWeightMatrix": every_opset(convert_mel_weight_matrix, first=17),
    # the axis is an attribute before 20 and an input from 20
    "DFT": every_opset(convert_dft, first=17),
}
