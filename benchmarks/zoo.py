"""The model zoo (tessel.testing.zoo) compiled by Tessel against onnxruntime and OpenVINO.

Run as `python benchmarks/zoo.py [--small] [--models resnet,vit,...]
[--exporters torchscript,dynamo] [--runs 10] [--threads 1,2] [--out PATH]`. Each model is built
with random weights (full size unless `--small`, which takes the tests' configurations), exported
to ONNX by each exporter, imported with `tessel.frontend.onnx.from_onnx` and compiled with
`tessel.graph.compile` twice: cold, with an empty cache, and warm, with the kernels and objects
the cold compile left. Tessel keeps its cache under `~/.cache/tessel` and no argument names
another for a whole model, so each compile runs in a child process (`--one`) whose HOME is a
temporary directory of that model's own. The warm child then starts each peer (onnxruntime with
ORT_ENABLE_ALL; OpenVINO, from the `bench` extra, with f32 precision, the latency hint and one
stream) in a worker process of its own (peers.py), checks Tessel's output against each (max
relative error max|a-b| / max|b|; top-1 equality with onnxruntime for the cnn and vit
classifiers), and times Tessel and the peers at each thread count, taking turns
(timing.interleaved_turns). Compile times leave out the ONNX import. The table ends with the
geometric mean of Tessel / the best peer per thread count. A model that fails to export, import,
compile or run gets a row saying where and why, and the script exits 1 at the end. Without
OpenVINO installed, onnxruntime is the only peer.
"""

from __future__ import annotations

import os

# OpenBLAS's idle workers sleep after 2**20 cycles instead of 2**28 (70 ms), so they do not take a
# core from the contender that runs next (timing.interleaved_medians). Set before NumPy loads it.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

import argparse
import itertools
import json
import math
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from peers import PEERS, available

from tessel.testing.zoo import BY_NAME, EXPORTERS, ZOO, ZooModel, export, import_torchvision

HEADER = ("model", "exporter", "ONNX nodes", "kernels", "cold compile s", "warm compile s",
          "max rel err (ORT, OV)", "top-1 equal")  # fmt: skip
SHORT = {"onnxruntime": "ORT", "openvino": "OV"}


class StageError(Exception):
    """A stage of one model's run failed; `stage` says which (export, import, compile, ...)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage, self.message = stage, message


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _stage(name: str, call):
    """`call()`, its exception (any) turned into a StageError naming `name`."""
    _progress(f"stage {name}")  # the child's last one names where a crash happened
    try:
        return call()
    except Exception as err:  # noqa: BLE001  (a benchmark reports every failure and goes on)
        raise StageError(name, _first_line(err)) from err


# --- the child: one compile (and, warm, the check and the timings) of one ONNX file ----------


def run_one(args: argparse.Namespace) -> dict:
    """Import and compile the ONNX file `args.one`; with `args.measure`, check and time it."""
    import onnx

    from tessel.frontend.onnx import from_onnx
    from tessel.graph import compile as compile_graph
    from tessel.support.fingerprint import source_fingerprint

    proto = onnx.load(args.one)
    initializers = {init.name for init in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in initializers]
    named = BY_NAME[args.models].inputs(not args.small)
    feed = {name: named[name] for name in graph_inputs}  # exporters drop unused inputs
    shapes = {name: value.shape for name, value in feed.items()}
    mod, params = _stage("import", lambda: from_onnx(proto, shape=shapes))
    start = time.perf_counter()
    compiled = _stage("compile", lambda: compile_graph(mod, params))
    result = {
        "compile_s": time.perf_counter() - start,
        "kernels": len(compiled.plan.calls),
        "source": source_fingerprint(),  # the cache keys' version (kernel_cache.py)
    }
    if args.measure:
        result.update(measure(args, args.one, compiled, feed))
    return result


def measure(args: argparse.Namespace, onnx_path: str, compiled, feed: dict) -> dict:
    """Outputs checked against each peer (max relative error; top-1 against onnxruntime), then
    the medians of Tessel and each peer per thread count, the peers in processes of their own."""
    from models import _openmp_threads
    from peers import PeerError, PeerWorker, relative_error
    from timing import LocalContender, interleaved_turns

    ours = _stage("run", lambda: compiled(**feed))
    ours = np.asarray(ours[0] if isinstance(ours, tuple | list) else ours)
    peers = [peer for peer in PEERS if available(peer)]
    set_threads, times, errors, top1 = _openmp_threads(), {}, {}, None
    for threads in args.threads:
        workers = []
        try:
            for peer in peers:
                worker = _stage(peer, lambda p=peer, t=threads: PeerWorker(p, onnx_path, t, feed))
                workers.append(worker)
                reference = np.asarray(_stage(peer, worker.outputs)[0])
                errors[peer] = max(errors.get(peer, 0.0), relative_error(ours, reference))
                if peer == "onnxruntime" and BY_NAME[args.models].family in ("cnn", "vit"):
                    top1 = bool(np.array_equal(ours.argmax(-1), reference.argmax(-1)))
            set_threads(threads)
            contenders = [LocalContender(lambda: compiled(**feed)), *workers]
            times[threads] = _stage("timing", lambda c=contenders: interleaved_turns(c, args.runs))
        except PeerError as err:
            raise StageError("peer", str(err)) from err
        finally:
            for worker in workers:
                worker.close()
    return {"max_rel_err": errors, "top1": top1, "times": times, "peers": peers}


# --- the parent: export, the two child compiles, the table --------------------------------------


def _child(
    args: argparse.Namespace, onnx_path: Path, model: str, home: Path, measure: bool
) -> dict:
    """Run `--one` in a child whose HOME (and so Tessel's cache) is `home`."""
    command = [sys.executable, str(Path(__file__).resolve()), "--one", str(onnx_path),
               "--models", model, "--runs", str(args.runs),
               "--threads", ",".join(map(str, args.threads))]  # fmt: skip
    command += ["--small"] * args.small + ["--measure"] * measure
    # The user site-packages stays where it was: it is found through HOME too.
    env = {**os.environ, "HOME": str(home), "PYTHONUSERBASE": site.getuserbase()}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        reply = json.loads(lines[-1])
        if "failed" in reply:
            raise StageError(reply["failed"], reply["error"])
        return reply
    stderr = done.stderr.strip().splitlines()
    stages = [line[len("stage ") :] for line in stderr if line.startswith("stage ")]
    why = stderr[-1] if stderr else "no output"
    raise StageError(
        stages[-1] if stages else "import", f"child exited with status {done.returncode}: {why}"
    )


def bench(args: argparse.Namespace, model: str, exporter: str) -> tuple[list[str], list[float]]:
    """One table row's cells for `model` exported by `exporter`, and its Tessel / best peer
    ratio per thread count (raises StageError)."""
    import onnx

    data = _stage("export", lambda: _export(BY_NAME[model], exporter, not args.small))
    nodes = len(onnx.load_from_string(data).graph.node)
    with tempfile.TemporaryDirectory(prefix="tessel-zoo-") as scratch:  # and an empty cache
        onnx_path = Path(scratch) / "model.onnx"
        onnx_path.write_bytes(data)
        _progress(f"{model}/{exporter}: {nodes} ONNX nodes, cold compile")
        cold = _child(args, onnx_path, model, Path(scratch), measure=False)
        _progress(f"{model}/{exporter}: warm compile, check and timing")
        warm = _child(args, onnx_path, model, Path(scratch), measure=True)
    top1 = {None: "n/a", True: "yes", False: "**no**"}[warm["top1"]]
    # An edit of Tessel's source between the two compiles makes the warm one miss the cache.
    stale = "" if warm["source"] == cold["source"] else " (Tessel edited: cold)"
    cells = [model, exporter, str(nodes), str(warm["kernels"]), f"{cold['compile_s']:.1f}",
             f"{warm['compile_s']:.1f}{stale}",
             ", ".join(f"{warm['max_rel_err'][p]:.1e}" for p in warm["peers"]), top1]  # fmt: skip
    ratios = []
    for threads in args.threads:
        tessel_s, *peer_s = warm["times"][str(threads)]
        ratios.append(tessel_s / min(peer_s))
        cells += [f"{seconds * 1e3:.3f}" for seconds in (tessel_s, *peer_s)]
        cells.append(f"{ratios[-1]:.2f}")
    return cells, ratios


def _export(model: ZooModel, exporter: str, full_size: bool) -> bytes:
    # timm imports torchvision too, whose operators must be declared first where its C++
    # extension does not load (import_torchvision); the zoo's timm builders leave that out.
    import_torchvision()
    return export(model, exporter, full_size)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(args: argparse.Namespace) -> tuple[list[str], bool]:
    """The markdown table's lines, and whether every model ran."""
    header = list(HEADER)
    for threads in args.threads:
        header += [f"Tessel ms ({threads}T)"]
        header += [f"{SHORT[peer]} ms ({threads}T)" for peer in PEERS if available(peer)]
        header.append(f"Tessel/best peer ({threads}T)")
    lines = [_row(header), _row(["---"] * len(header))]
    print("\n".join(lines), flush=True)
    ratios: list[list[float]] = []  # per model, per thread count
    for model, exporter in itertools.product(args.models.split(","), args.exporters.split(",")):
        try:
            cells, model_ratios = bench(args, model, exporter)
            ratios.append(model_ratios)
        except StageError as err:
            cells = [model, exporter, f"**{err.stage} failed**: {err.message}"]
            cells += [""] * (len(header) - len(cells))
        lines.append(_row([cell.replace("|", "\\|") for cell in cells]))
        print(lines[-1], flush=True)
    lines.append("")
    for k, threads in enumerate(args.threads):
        logs = [math.log(model_ratios[k]) for model_ratios in ratios]
        mean = math.exp(sum(logs) / len(logs)) if logs else float("nan")
        peers = " and ".join(peer for peer in PEERS if available(peer))
        lines.append(
            f"Geometric mean Tessel/best of {peers} at {threads} thread(s): {mean:.2f} "
            f"({len(logs)} models)"
        )
    runs = len(args.models.split(",")) * len(args.exporters.split(","))
    return lines, len(ratios) == runs


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the tests' small configurations")
    parser.add_argument("--models", default=",".join(model.name for model in ZOO))
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: the child's ONNX file
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    unknown = [m for m in args.models.split(",") if m not in BY_NAME]
    unknown += [e for e in args.exporters.split(",") if e not in EXPORTERS]
    if unknown:
        parser.error(f"unknown models or exporters {unknown}; models are {list(BY_NAME)}")
    return args


def main() -> int:
    args = parse_arguments()
    if args.one:
        try:
            reply = run_one(args)
        except StageError as err:
            reply = {"failed": err.stage, "error": err.message}
        print(json.dumps(reply))
        return 0
    lines, all_ran = table(args)
    print("\n".join(lines[-len(args.threads) - 1 :]))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0 if all_ran else 1


if __name__ == "__main__":
    sys.exit(main())
