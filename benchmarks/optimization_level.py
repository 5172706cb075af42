"""The kernels compiled at -O3 (Tessel's level) against another gcc level: compile and latency.

Run as `python benchmarks/optimization_level.py [--models resnet,efficientnet,...]
[--level -O2] [--runs 30]`. Each model is a zoo architecture at full size (tessel.testing.zoo,
random weights, the TorchScript exporter). It is compiled twice in this process with
`tessel.graph.compile`, once with the C compiler's `-O3` replaced by `--level` (the second
compile reads the scheduled kernels from the cache, but builds its C anew: the objects are
cached by their flags). The outputs of the two builds are compared first. Then the two are
timed in turns (timing.interleaved_medians) at 1 and 2 threads. The table gives each build's
seconds in the C compiler (the compile's "compiling and linking C" stage) and median
milliseconds, and the other level's latency over -O3's. Run with HOME set to a new directory,
so that neither build's C is in the cache.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")  # see benchmarks/models.py

import argparse
import sys

import numpy as np
import onnx
from timing import interleaved_medians

from tessel.cli.timings import StageTimer
from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph
from tessel.runtime import compiler
from tessel.runtime.threads import set_threads
from tessel.support.progress import NO_PROGRESS
from tessel.testing import zoo

sys.path.insert(0, os.path.dirname(__file__))

DEFAULT_MODELS = "squeezenet,mobilenet_v3,efficientnet,resnet,googlenet,convnext,vit"


def compiled_at(level: str, mod, params):
    """The model compiled with the kernels' `-O3` replaced by `level`, and the seconds its C
    took to compile and link."""
    base = compiler.BASE_FLAGS
    compiler.BASE_FLAGS = tuple(level if flag == "-O3" else flag for flag in base)
    compiler.compiler_flags.cache_clear()  # it keeps its answer for the process
    timer = StageTimer(NO_PROGRESS)  # what `tessel compile --timings` reports
    try:
        model = compile_graph(mod, params, progress=timer)
    finally:
        compiler.BASE_FLAGS = base
        compiler.compiler_flags.cache_clear()
    timer.end()
    return model, sum(s.seconds for s in timer.stages if s.name == "compiling and linking C")


def run_model(name: str, level: str, runs: int) -> list[str]:
    """Table rows for one zoo architecture: a row per thread count."""
    entry = zoo.BY_NAME[name]
    proto = onnx.load_from_string(zoo.export(entry, "torchscript", full_size=True))
    feed = entry.inputs(True)
    mod, params = from_onnx(proto, shape={k: v.shape for k, v in feed.items()})
    reference, reference_s = compiled_at("-O3", mod, params)
    other, other_s = compiled_at(level, mod, params)
    want, got = reference(**feed), other(**feed)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4, err_msg=name)
    rows = []
    for threads in (1, 2):
        set_threads(threads)
        calls = [lambda m=m: m(**feed) for m in (reference, other)]
        o3, lower = interleaved_medians(calls, runs, turns=8)
        rows.append(
            f"| {name} | {threads} | {reference_s:.2f} | {other_s:.2f} | "
            f"{o3 * 1e3:.3f} | {lower * 1e3:.3f} | {lower / o3:.3f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--level", default="-O2")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    zoo.import_torchvision()
    level = args.level
    print(
        f"| model | threads | -O3 C compiler s | {level} C compiler s | -O3 ms | {level} ms | "
        f"{level} / -O3 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        for row in run_model(name, level, args.runs):
            print(row, flush=True)


if __name__ == "__main__":
    main()
