"""Where a model's time goes, kernel by kernel, beside onnxruntime's profile of the same model.

Run as `python benchmarks/kernel_profile.py MODEL [--threads 1] [--rounds 10] [--top 15]`, MODEL
an .onnx file (its inputs static, or fixed with `--dim NAME=N`) or a zoo architecture's name
(tessel.testing.zoo, full size, exported by the TorchScript exporter). Tessel compiles the model
with the Python executor and calls each kernel by itself on the arena the whole model uses, in
`rounds` rounds; a kernel's time is the median of its calls times the calls a model run makes,
summed by fused kernel (the name without its `_N` suffix). onnxruntime (ORT_ENABLE_ALL, the same
threads) runs the model `rounds` times with its profiler on; its node times are summed by
operator type. The two tables show where each spends a model call, which is what a rule for an
architecture starts from (issue 32's per-architecture gaps). Kernels called alone do not see the
caches of a whole run warm, so the sums differ from the model's latency (benchmarks/zoo.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

from tessel.cli.models import parse_dims
from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph
from tessel.runtime.threads import set_threads


def load(name: str, directory: Path) -> Path:
    """The ONNX file: `name` itself, or the zoo architecture `name` exported into `directory`."""
    if name.endswith(".onnx"):
        return Path(name)
    from tessel.testing import zoo

    zoo.import_torchvision()
    path = directory / f"{name}.onnx"
    path.write_bytes(zoo.export(zoo.BY_NAME[name], "torchscript", full_size=True))
    return path


def tessel_kernels(path: Path, dims: dict[str, int], threads: int, rounds: int) -> dict:
    """Milliseconds a model call spends in each fused kernel, and the feed used."""
    mod, params = from_onnx(onnx.load(str(path)), dims=dims)
    model = compile_graph(mod, params, executor="python", threads=threads)
    rng = np.random.default_rng(0)
    feed = {}
    for spec in model.inputs:
        shape, dtype = tuple(int(d) for d in spec.shape), str(spec.dtype)
        feed[spec.name] = (
            rng.integers(0, 2, shape).astype(dtype)
            if "int" in dtype
            else rng.standard_normal(shape).astype(dtype)
        )
    model(**feed)  # the arena holds a real run's values
    arrays = dict(model._fixed)
    arrays.update(zip(model.plan.inputs, feed.values(), strict=True))
    arrays.update({slot: np.empty(shape, dtype) for slot, shape, dtype in model._fresh})
    names = [getattr(call, "kernel", "device_copy") for call in model.plan.calls]
    times: dict[str, list[float]] = collections.defaultdict(list)
    set_threads(threads)
    for _ in range(rounds):
        for (kernel, slots), name in zip(model._kernels, names, strict=True):
            args = [arrays[i] for i in slots]
            start = time.perf_counter()
            kernel(*args)
            times[name].append(time.perf_counter() - start)
    calls = collections.Counter(names)
    families: collections.Counter = collections.Counter()
    for name, measured in times.items():
        families[name.rstrip("0123456789").rstrip("_")] += statistics.median(measured) * calls[name]
    return {"ms": {k: v * 1e3 for k, v in families.items()}, "feed": feed}


def onnxruntime_ops(path: Path, feed: dict, threads: int, rounds: int, directory: Path) -> dict:
    """Milliseconds a model call spends in each operator type, by onnxruntime's profiler."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = str(directory / "onnxruntime")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    feed = {k: v for k, v in feed.items() if k in names}
    session.run(None, feed)
    for _ in range(rounds):
        session.run(None, feed)
    events = json.loads(Path(session.end_profiling()).read_text())
    ops: collections.Counter = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            ops[event["args"]["op_name"]] += event["dur"] / 1e3 / (rounds + 1)
    return dict(ops)


def table(title: str, ms: dict[str, float], top: int) -> str:
    """A markdown table of the `top` largest entries of `ms`, with their share of the total."""
    total = sum(ms.values())
    lines = [f"| {title} | ms | share |", "|---|---|---|"]
    for name, value in sorted(ms.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| {name} | {value:.2f} | {value / total:.0%} |")
    lines.append(f"| total | {total:.2f} | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="an .onnx file or a zoo architecture's name")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N")
    args = parser.parse_args()
    dims = parse_dims(args.dim)  # `tessel compile --dim`'s, with its errors
    with tempfile.TemporaryDirectory(prefix="tessel-kernel-profile-") as scratch:
        directory = Path(scratch)
        path = load(args.model, directory)
        ours = tessel_kernels(path, dims, args.threads, args.rounds)
        theirs = onnxruntime_ops(path, ours["feed"], args.threads, args.rounds, directory)
    print(f"{args.model}, {args.threads} thread(s), {args.rounds} rounds\n")
    print(table("Tessel kernel", ours["ms"], args.top))
    print()
    print(table("onnxruntime operator", theirs, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
