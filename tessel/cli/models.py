"""`tessel compile | run | bench | show MODEL.onnx`: the main job from the command line (their
arguments: tessel.cli.arguments; this module is imported only when one of them runs).

Long steps (import, passes, kernel scheduling, C compilation) show progress on stderr
(tessel.cli.progress; none with --quiet); errors reach the user as one paragraph (the caller
catches `TesselError` and the ONNX reader's errors).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tessel.cli.progress import command_progress
from tessel.support.errors import UserError
from tessel.support.progress import Progress

MODEL_ERRORS = (DecodeError,)


class CommandError(UserError):
    """A command-line argument is wrong (a bad --shape, --input or -o)."""


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """`["x=1x3x224x224"]` -> {"x": (1, 3, 224, 224)}, with a clear error on a bad item."""
    shapes = {}
    for item in items:
        name, _, text = item.partition("=")
        try:
            shapes[name] = tuple(int(d) for d in text.lower().split("x")) if text else ()
        except ValueError:
            raise CommandError(
                f"--shape {item!r}: expected NAME=D1xD2x... with integer dimensions",
                rule="cli.shape",
            ) from None
        if not name:
            raise CommandError(f"--shape {item!r}: the input name is missing", rule="cli.shape")
    return shapes


def parse_dims(items: list[str]) -> dict[str, Any]:
    """`["batch=1", "seq=1..512", "n=1.."]` -> {"batch": 1, "seq": (1, 512), "n": (1, None)}:
    a size, or the bounds of a dimension kept symbolic (docs/dynamic_shapes.md); a clear error
    on a bad item."""
    dims: dict[str, Any] = {}
    for item in items:
        name, _, text = item.partition("=")
        if not name:
            raise CommandError(f"--dim {item!r}: the dimension name is missing", rule="cli.dim")
        try:
            if ".." in text:
                low, _, high = text.partition("..")
                dims[name] = (int(low), int(high) if high else None)
            else:
                dims[name] = int(text)
        except ValueError:
            raise CommandError(
                f"--dim {item!r}: expected NAME=N with a whole number N, or NAME=MIN..MAX "
                "(NAME=MIN.. without an upper bound) to keep it symbolic",
                rule="cli.dim",
            ) from None
    return dims


def _import(args: argparse.Namespace, progress: Progress) -> tuple[Any, dict[str, np.ndarray]]:
    from tessel.frontend.onnx import DynamicInputError, from_onnx

    shapes = parse_shapes(args.shape) or None
    dims = parse_dims(getattr(args, "dim", []))
    progress.stage(f"importing {args.model}")
    try:
        return from_onnx(args.model, shape=shapes, dims=dims)
    except DynamicInputError as err:  # the hint names --shape, not from_onnx's shape=
        raise err.for_command_line() from err


def _refuse_symbolic(mod: Any) -> None:
    """The commands that compile write or time one library of static shapes: symbolic
    dimensions (--dim NAME=MIN..MAX) are for `tessel show` and the Python API for now."""
    from tessel.graph.symbolic_executor import symbolic_params

    symbolic = [p.name_hint for p in symbolic_params(mod["main"])]
    if symbolic:
        raise CommandError(
            f"inputs {symbolic} have symbolic dimensions; this command compiles for static shapes",
            rule="cli.symbolic",
            hint="give each dimension a size (--dim seq=128); tessel.graph.compile compiles a "
            "symbolic model once in Python (docs/dynamic_shapes.md)",
        )


def _compile(args: argparse.Namespace) -> Any:
    """Import and compile the model, showing progress unless --quiet; with --timings, print
    the time of each stage and pass afterwards."""
    from tessel.graph import compile as compile_graph
    from tessel.ir.transform import PassContext

    timer = None
    with command_progress(args.quiet) as progress:
        if getattr(args, "timings", False):
            from tessel.cli.timings import StageTimer

            progress = timer = StageTimer(progress)
        mod, params = _import(args, progress)
        _refuse_symbolic(mod)
        ctx = PassContext(instruments=(timer,) if timer else ())
        model = compile_graph(
            mod,
            params,
            progress=progress,
            ctx=ctx,
            threads=getattr(args, "threads", None),
            jobs=args.jobs,
        )
        if timer is not None:
            timer.end()
    if timer is not None:
        print(timer.table())
    return model


def _summary(model: Any) -> str:
    plan = model.plan
    inputs = ", ".join(f"{i.name}: {list(i.shape)} {i.dtype}" for i in model.inputs)
    return (
        f"inputs: {inputs}\nkernels: {len(plan.calls)}\narena: {plan.peak_bytes} bytes "
        f"(intermediates, reused by liveness)\nconstants: {plan.constant_bytes} bytes"
    )


def compile_model(args: argparse.Namespace) -> int:
    """`tessel compile`: import, compile, report; optionally export the library, its header and
    its weights (the model then runs from C with no Python)."""
    output = _output_directory(args.output) if args.output else None  # refused before compiling
    model = _compile(args)
    print(_summary(model))
    if output is not None:
        written = _export(model, output)
        print(f"exported to {output}: " + ", ".join(written))
    return 0


def _output_directory(path: str) -> Path:
    """`-o DIR`: a directory to export into, refused up front if it is a file (or is under one)."""
    out = Path(path)
    for where in (out, *out.parents):
        if where.exists() and not where.is_dir():
            raise CommandError(
                f"-o {path}: {where} is a file, but -o names the directory the model is "
                "exported into (model.so, model.h, params.safetensors, params.bin)",
                rule="cli.output",
                hint="give a directory path: a new one, or one holding a previous export",
            )
    return out


def _export(model: Any, out: Path) -> list[str]:
    """Export into `out`, first removing a previous export's files there (so none is left stale,
    e.g. params.bin of a model whose weights are now linked); other files stay. The names of the
    files written."""
    from tessel.graph.export import HEADER, LIBRARY, RAW_PARAMS, SAFETENSORS

    try:
        for name in (LIBRARY, HEADER, SAFETENSORS, RAW_PARAMS):
            (out / name).unlink(missing_ok=True)
        model.export(out)
    except OSError as err:
        where = f" ({err.filename})" if err.filename else ""
        raise CommandError(
            f"-o {out}: cannot write the export: {err.strerror or err}{where}", rule="cli.output"
        ) from err
    names = (LIBRARY, HEADER, SAFETENSORS, RAW_PARAMS)
    return sorted(name for name in names if (out / name).exists())


def _inputs(model: Any, items: list[str]) -> list[np.ndarray]:
    given = {}
    for item in items:
        name, _, path = item.partition("=")
        if not path:
            raise CommandError(f"--input {item!r}: expected NAME=FILE.npy", rule="cli.input")
        given[name] = np.load(path)
    unknown = sorted(set(given) - {i.name for i in model.inputs})
    if unknown:
        names = [i.name for i in model.inputs]
        raise CommandError(
            f"--input names {unknown}, but the model's inputs are {names}", rule="cli.input"
        )
    missing = [i.name for i in model.inputs if i.name not in given]
    if missing:
        raise CommandError(f"no --input for {missing}", rule="cli.input")
    return [given[i.name] for i in model.inputs]


def run_model(args: argparse.Namespace) -> int:
    """`tessel run`: compile, run on the given .npy inputs, print (and save) the outputs."""
    model = _compile(args)
    outputs = model(*_inputs(model, args.input))
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for index, value in enumerate(outputs):
        print(f"output {index}: shape {list(value.shape)} {value.dtype}")
        print(np.array2string(value, threshold=20, precision=5))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"{index}.npy", value)
    return 0


def _random_inputs(model: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = []
    for spec in model.inputs:
        if spec.dtype == "string":
            arrays.append(np.full(spec.shape, "tessel", dtype=object))
        elif np.dtype(spec.dtype).kind == "f":
            arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        else:
            arrays.append(np.zeros(spec.shape, spec.dtype))  # ids and masks: a valid index
    return arrays


def _median(call: Callable[[], object], runs: int, progress: Progress, label: str) -> float:
    """The median of `runs` timed calls after one warm-up, each run reported to `progress`."""
    progress.stage(f"timing {label}", total=runs)
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        progress.advance()
    return statistics.median(times)


def _onnxruntime_rows(
    args: argparse.Namespace, model: Any, arrays: list[np.ndarray], progress: Progress
) -> list[tuple[str, float]]:
    """onnxruntime's median at 1 and 2 threads on the same inputs; none when not installed."""
    try:
        import onnxruntime
    except ImportError:
        return []
    rows = []
    for threads in (1, 2):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            args.model, options, providers=["CPUExecutionProvider"]
        )
        feed = {spec.name: a for spec, a in zip(model.inputs, arrays, strict=True)}
        label = f"onnxruntime ({threads} thread{'s' if threads > 1 else ''})"
        seconds = _median(lambda s=session, f=feed: s.run(None, f), args.runs, progress, label)
        rows.append((label, seconds))
    return rows


def bench_model(args: argparse.Namespace) -> int:
    """`tessel bench`: median latency of the compiled model, and of onnxruntime when installed."""
    model = _compile(args)
    arrays = _random_inputs(model)
    with command_progress(args.quiet) as progress:
        label = "tessel"
        if args.threads is not None:
            label += f" ({args.threads} thread{'s' if args.threads > 1 else ''})"
        ours = _median(lambda: model(*arrays), args.runs, progress, label)
        rows = [(label, ours)] + _onnxruntime_rows(args, model, arrays, progress)
    print(f"{'runtime':<28} {'median ms':>10} {RATIO_COLUMN:>15}")
    for label, seconds in rows:
        print(f"{label:<28} {seconds * 1e3:10.3f} {seconds / ours:15.2f}")
    print(f"({RATIO_COLUMN}: the median divided by tessel's; above 1 is slower than tessel)")
    return 0


RATIO_COLUMN = "time vs tessel"


def show_model(args: argparse.Namespace) -> int:
    """`tessel show`: the imported graph in the text format, after the passes up to --after;
    with --memory, the compiled model's memory plan; with --schedules, each kernel's schedule
    plans."""
    from tessel.graph import astext
    from tessel.graph.passes import pipeline_until

    if args.memory:
        from tessel.graph.memory_report import memory_report

        print(memory_report(_compile(args).plan))
        return 0
    if args.schedules:
        from tessel.graph.schedule_report import kernel_plans, schedule_report

        with command_progress(args.quiet) as progress:
            mod, params = _import(args, progress)
            progress.stage("planning schedules")
            kernels = kernel_plans(mod, params)
        print(schedule_report(kernels))
        return 0

    passes = pipeline_until(args.after)  # an unknown pass is refused before the import
    with command_progress(args.quiet) as progress:
        mod, _ = _import(args, progress)
    print(astext(passes(mod), show_meta_data=False, show_types=True))
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "compile": compile_model, "run": run_model, "bench": bench_model, "show": show_model,
}  # fmt: skip
