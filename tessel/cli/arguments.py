"""The `tessel` command's argument parser, apart from the commands: it imports nothing but
argparse, so `tessel --help` and a wrong argument answer at once. Each command's module
(tessel.cli.models, demo, scripts) is imported only when that command runs."""

from __future__ import annotations

import argparse
from typing import Any

# The passes `tessel show --after` can name, in the order they run: the graph pipeline of
# `tessel.graph.compile` (tessel/graph/passes/pipeline.py, `default_pipeline`), then LowerTE.
# Written out so that `--help` imports no compiler; tests/test_cli_help.py checks it against the
# pipeline, and `tessel show` itself takes the names from the pipeline.
SHOW_PASSES = (
    "InferType", "ToGraphNormalForm", "SimplifyExpr", "CombineParallelDense", "AlterOpLayout",
    "FoldConstant", "DeadCodeElimination", "FuseOps", "InferType", "LowerTE",
)  # fmt: skip
SHOW_DEFAULT = "InferType"  # its last run ends the graph pipeline: the graph LowerTE takes
BENCH_RUNS = 20

SHOW_DESCRIPTION = (
    "Import an ONNX model and print its graph in the text format (Relay's), after the graph "
    "pipeline of `tessel compile` has run up to --after. Without --after: the whole pipeline "
    "before LowerTE, that is the typed graph of fused primitive functions that LowerTE turns "
    "into kernels."
)
AFTER_HELP = (
    "print the graph after the passes up to and including PASS, one of (in the order they run): "
    f"{', '.join(SHOW_PASSES)}. InferType runs twice: PASS names its last run. "
    f"Default: {SHOW_DEFAULT}, the end of the graph pipeline (the fused graph)"
)
BENCH_DESCRIPTION = (
    "Compile an ONNX model and time it on random inputs: the median latency of tessel, and of "
    "onnxruntime at 1 and 2 threads when it is installed. The table's last column, `time vs "
    "tessel`, is each runtime's median divided by tessel's (above 1: slower than tessel)."
)


def parser(description: str | None) -> argparse.ArgumentParser:
    """The parser of the `tessel` command and its subcommands."""
    parser = argparse.ArgumentParser(prog="tessel", description=description)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "demo", help="compile all-MiniLM-L6-v2 and embed sentences; then RFC 77's 127 matmul"
    )
    _model_commands(commands)
    print_cmd = commands.add_parser("print", help="parse a TVMScript file and print it back")
    print_cmd.add_argument("file")
    build_cmd = commands.add_parser("build", help="lower a TVMScript file and print its C source")
    build_cmd.add_argument("file")
    return parser


def _model_commands(commands: Any) -> None:
    """`compile`, `run`, `bench` and `show` on an ONNX model (run by tessel.cli.models)."""
    compile_cmd = commands.add_parser("compile", help="compile an ONNX model to native code")
    _model_arguments(compile_cmd)
    compile_cmd.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="export the model into directory DIR (made if missing): model.so, model.h, "
        "params.safetensors, params.bin; a previous export there is replaced",
    )
    compile_cmd.add_argument(
        "--timings",
        action="store_true",
        help="print the wall time of each compile stage (import, graph passes, scheduling, "
        "lowering, C compilation) and of each graph pass",
    )
    run_cmd = commands.add_parser("run", help="compile an ONNX model and run it on .npy inputs")
    _model_arguments(run_cmd)
    run_cmd.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="the value of the model's input NAME, a NumPy .npy file; give one --input for "
        "each input of the model",
    )
    run_cmd.add_argument("--save", metavar="DIR", help="write each output as DIR/<i>.npy")
    _threads_argument(run_cmd)
    bench_cmd = commands.add_parser(
        "bench",
        help="time an ONNX model (and onnxruntime beside it)",
        description=BENCH_DESCRIPTION,
    )
    _model_arguments(bench_cmd)
    bench_cmd.add_argument(
        "--runs",
        type=_positive,
        default=BENCH_RUNS,
        metavar="N",
        help="timed runs of each runtime, after one untimed warm-up run; the table shows "
        f"their median (default: {BENCH_RUNS})",
    )
    _threads_argument(bench_cmd)
    show_cmd = commands.add_parser(
        "show",
        help="print an ONNX model's graph in the text format, after graph passes",
        description=SHOW_DESCRIPTION,
    )
    _model_arguments(show_cmd)
    show_cmd.add_argument("--after", default=SHOW_DEFAULT, metavar="PASS", help=AFTER_HELP)
    show_cmd.add_argument(
        "--memory",
        action="store_true",
        help="compile the model and print its memory plan instead: each arena (a device and "
        "memory scope) with its allocated and peak live bytes, the constants per device, the "
        "copies between devices per run, and the largest tensors",
    )
    show_cmd.add_argument(
        "--schedules",
        action="store_true",
        help="print each kernel's schedule plans instead: the plan every default-schedule rule "
        "chose for its blocks (tiles, packing, padding, vector lanes, prefetch, parallel "
        "loops) and the steps the schedule refused",
    )


def _threads_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--threads",
        type=_positive,
        default=None,
        metavar="N",
        help="run the model's kernels on N threads (default: the cores this process may use)",
    )


def _positive(text: str) -> int:
    """An argument that is a whole number of at least 1 (argparse reports the error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _model_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("model", help="an .onnx file")
    command.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=1x3x224x224",
        help="the static shape of an input with dynamic dimensions",
    )
    command.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=N",
        help="the size of a named dynamic dimension (ONNX's dim_param, such as batch=1), in every "
        "input naming it; --shape takes precedence. NAME=MIN..MAX (or MIN..) keeps it a shape "
        "symbol with those bounds, which `tessel show` prints (the commands that compile need "
        "sizes; tessel.graph.compile compiles a symbolic model in Python)",
    )
    command.add_argument(
        "-q", "--quiet", action="store_true", help="show no progress on stderr (errors only)"
    )
    command.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="schedule and lower the model's kernels in N processes (default: the cores this "
        "process may use)",
    )
