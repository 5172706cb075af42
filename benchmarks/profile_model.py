"""Run one of models.py's models in a loop at one thread, for a profiler to sample.

Run as `perf record -F 999 -g python benchmarks/profile_model.py resnet 8`, then
`perf report --no-children --sort symbol -g none --dsos <the model's .so>`: each fused function
of the model is a symbol (`fused_nn_conv2d_..._impl._omp_fn.1` is its parallel loop). The model
is compiled first (the profile then also holds the compile; `--dsos` leaves it out), then called
for the given seconds; the last line gives the calls and the time per call.
"""

from __future__ import annotations

import argparse
import time

from models import MODELS, _openmp_threads

from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("seconds", type=float, nargs="?", default=8.0)
    args = parser.parse_args()
    _label, case = MODELS[args.model]
    proto, feed, _torch_call = case()
    mod, params = from_onnx(proto, shape={k: v.shape for k, v in feed.items()})
    compiled = compile_graph(mod, params)
    _openmp_threads()(1)
    compiled(**feed)  # warm-up
    calls, end = 0, time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        compiled(**feed)
        calls += 1
    print(f"{args.model}: {calls} calls, {args.seconds / calls * 1e3:.2f} ms each")


if __name__ == "__main__":
    main()
