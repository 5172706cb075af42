"""Cold and warm compile times of whole models, stage by stage, in one process and in several.

Run as `python benchmarks/compile_time.py [--models resnet,efficientnet,minilm,...]
[--jobs 1,2] [--rounds 2]`. The models are the zoo's architectures at full size
(tessel.testing.zoo, random weights, exported by the TorchScript exporter), timm's
EfficientNet-Lite0 (`efficientnet_lite0`, random weights, the same exporter) and
all-MiniLM-L6-v2 from its packaged weights (`minilm`, batch 1, 128 tokens). Each compile is
`tessel compile MODEL.onnx --timings --jobs N` in a child process whose HOME is a new empty
directory, so nothing is cached (cold); the same command again in that HOME is the warm compile
(scheduled kernels, lowered modules and the library all cached). Rounds take turns over the
jobs counts, so a machine that gets busier slows each alike. The table has the median over the
rounds of each stage (scheduling kernels, lowering TensorIR passes, generating C, compiling C)
and of the whole compile without the ONNX import, cold and warm, and the cold compile's time
over the first jobs count's (one process by default).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

ZOO_MODELS = ("resnet", "efficientnet", "mobilenet_v3", "squeezenet", "densenet", "distilbert")
# The architectures issue 32's compile-time bar names that the zoo lacks.
TIMM_MODELS = ("efficientnet_lite0",)
STAGES = (
    ("scheduling kernels", "schedule"),
    ("lowering TensorIR passes", "lower"),
    ("generating C", "C text"),
    ("compiling and linking C", "C compiler"),
)
COMMAND = "import sys; from tessel.cli import main; sys.exit(main(sys.argv[1:]))"


def write_model(name: str, directory: Path) -> tuple[Path, list[str]]:
    """The model's ONNX file in `directory`, and the --shape arguments its dynamic inputs need."""
    path = directory / f"{name}.onnx"
    if name == "minilm":
        from tessel.cli import minilm

        proto = minilm.load_encoder(minilm.model_dir())
        path.write_bytes(proto.SerializeToString())
        shapes = [f"{i.name}=1x128" for i in proto.graph.input]
        return path, shapes
    from tessel.testing import zoo

    zoo.import_torchvision()
    if name in TIMM_MODELS:
        _export_timm(name, path)
        return path, []
    path.write_bytes(zoo.export(zoo.BY_NAME[name], "torchscript", full_size=True))
    shapes = []
    for graph_input in onnx.load(str(path)).graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            value = zoo.BY_NAME[name].inputs(True)[graph_input.name]
            shapes.append(f"{graph_input.name}={'x'.join(map(str, value.shape))}")
    return path, shapes


def _export_timm(name: str, path: Path) -> None:
    """A timm architecture outside the zoo (random weights, batch 1, 224²), exported by the
    TorchScript exporter."""
    import timm
    import torch

    model = timm.create_model(name, pretrained=False).eval()
    image = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (image,), str(path), input_names=["pixel_values"], dynamo=False)


def timed_compile(model: Path, shapes: list[str], jobs: int, home: Path) -> dict[str, float]:
    """Each stage's seconds of one `tessel compile --timings` in `home`, and "total" without
    the ONNX import."""
    command = [sys.executable, "-c", COMMAND, "compile", str(model), "--timings", "-q"]
    command += ["--jobs", str(jobs)] + [arg for s in shapes for arg in ("--shape", s)]
    env = {**os.environ, "HOME": str(home)}  # Tessel's caches live under ~/.cache/tessel
    # In `home`: `python -c` imports from its working directory first, so run from a checkout
    # it would compile that checkout's Tessel whatever PYTHONPATH names (an A/B of two versions).
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=home)
    if result.returncode != 0:
        raise RuntimeError(f"{model.name} failed to compile:\n{result.stderr}")
    times: dict[str, float] = {}
    for line in result.stdout.splitlines():
        for stage, label in (*STAGES, ("total", "total")):
            if line.startswith(stage) and not line.startswith("  "):
                times[label] = float(line[len(stage) :].split()[0])
        if line.startswith("importing "):
            times["import"] = float(line.split()[-1])
    times["total"] -= times.get("import", 0.0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join((*ZOO_MODELS, *TIMM_MODELS, "minilm")))
    parser.add_argument("--jobs", default="1,2", help="comma-separated process counts")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    jobs_counts = [int(j) for j in args.jobs.split(",")]
    header = [
        "model",
        "jobs",
        *(label for _, label in STAGES),
        "cold s",
        "warm s",
        "cold / first jobs'",
    ]
    rows = []
    with tempfile.TemporaryDirectory(prefix="tessel-compile-time-") as scratch:
        for name in args.models.split(","):
            model, shapes = write_model(name, Path(scratch))
            cold: dict[int, list[dict[str, float]]] = {j: [] for j in jobs_counts}
            warm: dict[int, list[float]] = {j: [] for j in jobs_counts}
            for _ in range(args.rounds):
                for jobs in jobs_counts:
                    with tempfile.TemporaryDirectory(prefix="home-", dir=scratch) as home:
                        cold[jobs].append(timed_compile(model, shapes, jobs, Path(home)))
                        warm[jobs].append(timed_compile(model, shapes, jobs, Path(home))["total"])
            base = statistics.median(t["total"] for t in cold[jobs_counts[0]])
            for jobs in jobs_counts:
                stage = [
                    statistics.median(t.get(label, 0.0) for t in cold[jobs]) for _, label in STAGES
                ]
                total = statistics.median(t["total"] for t in cold[jobs])
                warm_total = statistics.median(warm[jobs])
                figures = [*stage, total, warm_total]
                rows.append(
                    [name, str(jobs), *(f"{f:.2f}" for f in figures), f"{total / base:.2f}"]
                )
            print(f"{name}: done", file=sys.stderr, flush=True)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
