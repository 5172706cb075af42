"""Kernels compiled by Tessel (default schedule) against NumPy and PyTorch, at 1 and 2 threads.

Run as `python benchmarks/kernels.py [--runs N] [--kernels a,b,...]`. Each kernel is a TOPI compute
on `te.placeholder`s, lowered with `te.create_prim_func`, scheduled with
`tessel.schedule.rules.default_schedule` (no tuning) and built with `tessel.build`, both for this
machine with multiply-adds fused (`Target.detect()` with `fp_contract`, as `tessel.graph.compile`
builds a model's kernels); its result is
checked against PyTorch (max |error| / max |reference| <= 1e-3) before timing. Kernels: matmul
1024³ and 127³, batch_matmul at attention shapes ([12,128,32] x [12,32,128]), dense 64x784 · 512,
the ResNet-18 conv2d layers (NCHW, batch 1: 3x3 64->64 at 56², 3x3 128->128 at 28², 3x3 stride 2
64->128 from 56², 1x1 64->128 at 56²), depthwise 3x3 on 32 channels at 112², the same convolutions
in the channel-blocked layout AlterOpLayout gives a model (topi.nn.conv2d_NCHWc and
depthwise_conv2d_NCHWc on NCHW16c data, blocked by NumPy before timing; PyTorch runs its NCHW
conv), softmax and layer_norm over the last axis of [128, 384]. NumPy is `np.matmul` (OpenBLAS) for
the products and a short expression for softmax and layer_norm (single-threaded); it has no conv. A
C probe compiled at run time (gcc -O3 -march=native, twelve independent FMA chains on the widest
vectors) measures the FP32 peak; a kernel's % of peak is its GFLOP/s over the one-core peak times
the thread count. Softmax's and layer_norm's FLOP counts are nominal (5 and 8 per element, exp and
sqrt counted as one). Times are medians over --runs calls after a warm-up, all taken in the same
run, the contenders taking turns of a fifth of the calls each (timing.interleaved_medians).
"""

from __future__ import annotations

import os

# OpenBLAS's idle workers sleep after 2**20 cycles instead of 2**28 (70 ms), so they do not take a
# core from the contender that runs next (timing.interleaved_medians). Set before NumPy loads it.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

import argparse
import contextlib
import ctypes
import ctypes.util
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812  (PyTorch's convention)
from timing import interleaved_medians

import tessel
from tessel import te, topi
from tessel.runtime.compiler import find_compiler
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.default import host_target
from tessel.topi.layout import transform_array

try:  # scikit-learn's dependency (the demo extra); without it NumPy's OpenBLAS uses every core
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

# Twelve independent chains cover the FMA latency times the FMA ports of current x86 cores.
PROBE_SOURCE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX2__)
#define LANES 8
#else
#define LANES 4
#endif
#define CHAINS 12
typedef float vf __attribute__((vector_size(LANES * 4)));

static float chains(long iters, float a, float b) {
    vf acc[CHAINS], va = {0}, vb = {0};
    for (int l = 0; l < LANES; l++) { va[l] = a; vb[l] = b; }
    for (int c = 0; c < CHAINS; c++) acc[c] = vb * (float)(c + 1);
    for (long n = 0; n < iters; n++)
        for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * va + vb;
    float sum = 0;
    for (int c = 0; c < CHAINS; c++) for (int l = 0; l < LANES; l++) sum += acc[c][l];
    return sum;
}

int main(int argc, char **argv) {
    int threads = atoi(argv[1]);
    long iters = atol(argv[2]);
    float a = (float)atof(argv[3]), b = (float)atof(argv[4]), sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        double start = omp_get_wtime();
        #pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += chains(iters, a, b);
        printf("%f\n", 2.0 * CHAINS * LANES * iters * threads / (omp_get_wtime() - start) / 1e9);
    }
    printf("lanes %d sink %f\n", LANES, sink);
    return 0;
}
"""


def fma_peak(threads_list: tuple[int, ...]) -> tuple[dict[int, float], int]:
    """Best GFLOP/s of five FMA-probe runs at each thread count (interference only slows it), and
    the probe's FP32 vector lanes."""
    with tempfile.TemporaryDirectory(prefix="tessel-fma-") as scratch:
        source, binary = Path(scratch) / "fma.c", Path(scratch) / "fma"
        source.write_text(PROBE_SOURCE)
        flags = ["-O3", "-march=native", "-ffp-contract=fast", "-fopenmp"]
        subprocess.run([*find_compiler(), *flags, str(source), "-o", str(binary)], check=True)
        peaks, lanes = {}, 0
        for threads in threads_list:
            # a and b are run-time values, so the compiler can neither fold nor drop the chains.
            command = [str(binary), str(threads), "20000000", "0.9999999", "0.0000001"]
            lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            *rates, last = lines.splitlines()
            peaks[threads] = max(float(r) for r in rates)
            lanes = int(last.split()[1])
    return peaks, lanes


@dataclass(frozen=True)
class Kernel:
    """One kernel: its TOPI compute, input shapes, FLOP count, and reference calls."""

    label: str
    compute: Callable[..., object]  # placeholders -> the output tensor
    shapes: tuple[tuple[int, ...], ...]
    flops: int
    torch_call: Callable[..., torch.Tensor]
    numpy_call: Callable[..., np.ndarray] | None = None
    # Tessel's inputs from the references' (a blocked layout, made by NumPy before timing) and
    # its output back in the references' layout (for the error only).
    to_tessel: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
    from_tessel: Callable[[np.ndarray], np.ndarray] | None = None


def _conv(cin: int, cout: int, size: int, k: int, stride: int) -> Kernel:
    pad, out = k // 2, (size + 2 * (k // 2) - k) // stride + 1
    return Kernel(
        f"conv2d {k}x{k} {cin}->{cout} s{stride} {size}²",
        lambda x, w: topi.nn.conv2d_nchw(x, w, stride, pad, 1),
        ((1, cin, size, size), (cout, cin, k, k)),
        2 * cout * out * out * cin * k * k,
        lambda x, w: F.conv2d(x, w, stride=stride, padding=pad),
    )


def _conv_nchwc(cin: int, cout: int, size: int, k: int, stride: int, block: int = 16) -> Kernel:
    """The conv AlterOpLayout gives a model: topi.nn.conv2d_NCHWc on NCHW16c data and an
    OIHW16i16o kernel, against PyTorch's NCHW conv2d."""
    pad, out = k // 2, (size + 2 * (k // 2) - k) // stride + 1
    data, kernel = f"NCHW{block}c", f"OIHW{block}i{block}o"
    return Kernel(
        f"conv2d {k}x{k} {cin}->{cout} s{stride} {size}², {data}",
        lambda x, w: topi.nn.conv2d_NCHWc(x, w, stride, pad, 1, data, data),
        ((1, cin, size, size), (cout, cin, k, k)),
        2 * cout * out * out * cin * k * k,
        lambda x, w: F.conv2d(x, w, stride=stride, padding=pad),
        to_tessel=lambda arrays: [
            transform_array(arrays[0], "NCHW", data),
            transform_array(arrays[1], "OIHW", kernel),
        ],
        from_tessel=lambda y: transform_array(y, data, "NCHW"),
    )


def _depthwise_nchwc(channels: int, size: int, block: int = 16) -> Kernel:
    """The depthwise conv AlterOpLayout gives a model (NCHW16c, OIHW1i16o)."""
    data, kernel = f"NCHW{block}c", f"OIHW1i{block}o"
    return Kernel(
        f"depthwise 3x3 c{channels} {size}², {data}",
        lambda x, w: topi.nn.depthwise_conv2d_NCHWc(x, w, 1, 1, 1, data, data),
        ((1, channels, size, size), (channels, 1, 3, 3)),
        2 * channels * size * size * 9,
        lambda x, w: F.conv2d(x, w, padding=1, groups=channels),
        to_tessel=lambda arrays: [
            transform_array(arrays[0], "NCHW", data),
            transform_array(arrays[1], "OIHW", kernel),
        ],
        from_tessel=lambda y: transform_array(y, data, "NCHW"),
    )


def _softmax_np(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm_np(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5) * gamma + beta


KERNELS = {
    "matmul-1024": Kernel("matmul 1024³", topi.matmul, ((1024, 1024), (1024, 1024)),
                          2 * 1024**3, torch.matmul, np.matmul),
    "matmul-127": Kernel("matmul 127³", topi.matmul, ((127, 127), (127, 127)),
                         2 * 127**3, torch.matmul, np.matmul),
    "batch-matmul": Kernel("batch_matmul 12x128x32·32x128",
                           lambda a, b: topi.nn.batch_matmul(a, b, transpose_b=False),
                           ((12, 128, 32), (12, 32, 128)), 2 * 12 * 128 * 128 * 32,
                           torch.matmul, np.matmul),
    "dense": Kernel("dense 64x784 · 512", topi.nn.dense, ((64, 784), (512, 784)),
                    2 * 64 * 784 * 512, F.linear, lambda x, w: np.matmul(x, w.T)),
    "conv3x3-64": _conv(64, 64, 56, 3, 1),
    "conv3x3-128": _conv(128, 128, 28, 3, 1),
    "conv3x3-s2": _conv(64, 128, 56, 3, 2),
    "conv1x1": _conv(64, 128, 56, 1, 1),
    "conv3x3-64-nchwc": _conv_nchwc(64, 64, 56, 3, 1),
    "conv3x3-128-nchwc": _conv_nchwc(128, 128, 28, 3, 1),
    "conv3x3-s2-nchwc": _conv_nchwc(64, 128, 56, 3, 2),
    "conv1x1-nchwc": _conv_nchwc(64, 128, 56, 1, 1),
    "depthwise": Kernel("depthwise 3x3 c32 112²",
                        lambda x, w: topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1),
                        ((1, 32, 112, 112), (32, 1, 3, 3)), 2 * 32 * 112 * 112 * 9,
                        lambda x, w: F.conv2d(x, w, padding=1, groups=32)),
    "depthwise-nchwc": _depthwise_nchwc(32, 112),
    "softmax": Kernel("softmax [128, 384]", lambda x: topi.nn.softmax(x, -1), ((128, 384),),
                      5 * 128 * 384, lambda x: torch.softmax(x, -1), _softmax_np),
    "layer-norm": Kernel("layer_norm [128, 384]",
                         lambda x, g, b: topi.nn.layer_norm(x, g, b, -1, 1e-5),
                         ((128, 384), (384,), (384,)), 8 * 128 * 384,
                         lambda x, g, b: F.layer_norm(x, (384,), g, b, 1e-5), _layer_norm_np),
}  # fmt: skip


def _openmp_threads() -> Callable[[int], None]:
    """omp_set_num_threads of the libgomp that Tessel's -fopenmp libraries load."""
    name = ctypes.util.find_library("gomp")
    library = ctypes.CDLL(name) if name else None
    return (lambda n: library.omp_set_num_threads(n)) if library else (lambda n: None)


def _blas_threads(threads: int) -> contextlib.AbstractContextManager:
    """NumPy's BLAS limited to `threads` (unlimited without threadpoolctl)."""
    if threadpool_limits is None:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


def _build(kernel: Kernel, shapes: list) -> tuple[Callable[..., None], tuple[int, ...]]:
    """The compiled kernel (inputs of `shapes`) with the default schedule, and its output
    shape."""
    inputs = [te.placeholder(s, name=f"in{i}") for i, s in enumerate(shapes)]
    out = kernel.compute(*inputs)
    # For this machine with multiply-adds fused, as `tessel.graph.compile` builds a model's
    # kernels (Target.detect(), fp_contract).
    target = replace(host_target(), fp_contract=True)
    func = default_schedule(te.create_prim_func([*inputs, out]), target).func
    return tessel.build(func, target), out.const_shape()


def _relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(ours - reference)) / max(np.max(np.abs(reference)), 1e-6))


def _ratio(ours: float, theirs: float | None) -> str:
    return "n/a" if theirs is None else f"{ours / theirs:.2f}"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.3f}"


def measure(kernel: Kernel, runs: int, set_threads, peak: float) -> list[str]:
    """Check `kernel` against PyTorch, then one table row per thread count."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s, dtype=np.float32) for s in kernel.shapes]
    tensors = [torch.from_numpy(a) for a in arrays]
    ours_in = kernel.to_tessel(arrays) if kernel.to_tessel else arrays
    try:
        module, out_shape = _build(kernel, [a.shape for a in ours_in])
    except Exception as err:  # noqa: BLE001  (report the failure and go on to the next kernel)
        return [f"| {kernel.label} | - | build failed: {type(err).__name__}: {err} |"]
    out = np.zeros(out_shape, "float32")
    module(*ours_in, out)
    with torch.inference_mode():
        got = kernel.from_tessel(out) if kernel.from_tessel else out
        error = _relative_error(got, kernel.torch_call(*tensors).numpy())
    status = "" if error <= 1e-3 else f" MISMATCH (rel. error {error:.1e})"
    rows = []
    for threads in (1, 2):
        set_threads(threads)
        torch.set_num_threads(threads)
        contenders = [lambda: module(*ours_in, out), lambda: kernel.torch_call(*tensors)]
        if kernel.numpy_call is not None:
            contenders.append(lambda: kernel.numpy_call(*arrays))
        with _blas_threads(threads), torch.inference_mode():
            ours, torch_s, *numpy_s = interleaved_medians(contenders, runs)
        numpy_s = numpy_s[0] if numpy_s else None
        gflops = kernel.flops / ours / 1e9
        rows.append(
            f"| {kernel.label}{status} | {threads} | {_ms(ours)} | {_ms(numpy_s)} | "
            f"{_ms(torch_s)} | {_ratio(ours, numpy_s)} | {_ratio(ours, torch_s)} | "
            f"{gflops:.1f} | {100 * gflops / (peak * threads):.1f} | {error:.1e} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    args = parser.parse_args()
    peaks, lanes = fma_peak((1, 2))
    print(
        f"FMA probe ({lanes} x fp32 lanes): {peaks[1]:.1f} GFLOP/s on one thread, "
        f"{peaks[2]:.1f} on two; % of peak is against {peaks[1]:.1f} x threads\n"
    )
    print(
        "| kernel | threads | Tessel ms | NumPy ms | PyTorch ms | Tessel/NumPy | "
        "Tessel/PyTorch | Tessel GFLOP/s | % of peak | max rel. error vs PyTorch |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    set_threads = _openmp_threads()
    for key in args.kernels.split(","):
        for row in measure(KERNELS[key], args.runs, set_threads, peaks[1]):
            print(row, flush=True)


if __name__ == "__main__":
    main()
