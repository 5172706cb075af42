"""Latency under CPU contention: Tessel and onnxruntime at 2 threads while busy processes share
the machine.

Run as `python benchmarks/contention.py [--runs 40] [--busy 0,2,3,4] [--models minilm,resnet]`.
For each count of busy processes (each a Python loop spinning on one core, started before and
stopped after the row), the models run at 2 threads, Tessel and onnxruntime taking turns
(timing.interleaved_medians), outputs checked against each other first. The table gives the
medians and Tessel / onnxruntime; issue 32's bar is <= 1.2 at every load. Models: MiniLM-L6
(tessel demo's encoder, batch 1, 128 tokens) and the ResNet-18-style and MobileNetV2-style CNNs
of benchmarks/models.py (1x3x112x112).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")  # see benchmarks/models.py

import argparse
import multiprocessing
import sys

import numpy as np
import onnxruntime

sys.path.insert(0, os.path.dirname(__file__))

from models import _minilm_case, _torch_case, mobilenet, resnet  # noqa: E402
from timing import interleaved_medians  # noqa: E402

from tessel.frontend.onnx import from_onnx  # noqa: E402
from tessel.graph import compile as compile_graph  # noqa: E402

MODELS = {
    "minilm": lambda: _minilm_case(1),
    "resnet": lambda: _torch_case(resnet),
    "mobilenet": lambda: _torch_case(mobilenet),
}


def _spin() -> None:
    while True:
        pass


def _session(model_proto, threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(
        model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--busy", default="0,2,3,4")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(
        f"| model | busy processes | Tessel ms ({args.threads} threads) | onnxruntime ms | "
        "Tessel / onnxruntime |"
    )
    print("|---|---|---|---|---|")
    for key in args.models.split(","):
        model_proto, feed, _ = MODELS[key]()
        mod, params = from_onnx(model_proto, shape={k: v.shape for k, v in feed.items()})
        compiled = compile_graph(mod, params, threads=args.threads)
        session = _session(model_proto, args.threads)
        ours = compiled(**feed)
        ours = ours[0] if isinstance(ours, tuple) else ours
        np.testing.assert_allclose(ours, session.run(None, feed)[0], rtol=1e-3, atol=1e-4)
        for busy in map(int, args.busy.split(",")):
            workers = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
            for worker in workers:
                worker.start()
            try:
                calls = [
                    lambda m=compiled, f=feed: m(**f),
                    lambda s=session, f=feed: s.run(None, f),
                ]
                tessel_s, ort_s = interleaved_medians(calls, args.runs)
            finally:
                for worker in workers:
                    worker.terminate()
                    worker.join()
            print(
                f"| {key} | {busy} | {tessel_s * 1e3:.2f} | {ort_s * 1e3:.2f} | "
                f"{tessel_s / ort_s:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
