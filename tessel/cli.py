"""The `tessel` command: `tessel demo`, `tessel print FILE`, `tessel build FILE`."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tessel import driver, script
from tessel.support.errors import TesselError
from tessel.tir import interpreter

# The 127x127x127 matmul of seeds/003 (RFC 77 thread), as a kernel author writes it for TVM.
MATMUL_127 = '''
@T.prim_func
def matmul(A: T.Buffer[(127, 127), "float32"], B: T.Buffer[(127, 127), "float32"],
           C: T.Buffer[(127, 127), "float32"]):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] += A[vi, vk] * B[vk, vj]
'''


def _timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def _median_time(step: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        _, seconds = _timed(step)
        times.append(seconds)
    return statistics.median(times)


def run_demo(out: Callable[[str], None] = print) -> int:
    """Parse, print, interpret, compile and run the seed's 127 matmul, checking against NumPy."""
    func, t_parse = _timed(lambda: script.parse(MATMUL_127, filename="<demo: seeds/003 matmul>"))
    out("# the 127x127x127 matmul of seeds/003, parsed and printed back:\n")
    out(str(func))
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (127, 127)).astype("float32") for _ in range(2))
    expected = a @ b
    c_interp = np.zeros((127, 127), "float32")
    _, t_interp = _timed(lambda: interpreter.run(func, a, b, c_interp))
    module, t_build = _timed(lambda: driver.build(func))
    c_native = np.zeros((127, 127), "float32")
    t_native = _median_time(lambda: module(a, b, c_native), repeat=20)
    t_numpy = _median_time(lambda: a @ b, repeat=20)
    err_interp = float(np.max(np.abs(c_interp - expected)))
    err_native = float(np.max(np.abs(c_native - expected)))
    ok = err_interp < 1e-4 and err_native < 1e-4
    rows = [
        ("parse script", t_parse, ""),
        ("reference interpreter", t_interp, f"max |error| vs NumPy {err_interp:.2e}"),
        ("lower + C codegen + compile", t_build, "cached by source hash"),
        ("compiled C run (median of 20)", t_native, f"max |error| vs NumPy {err_native:.2e}"),
        ("NumPy a @ b (median of 20)", t_numpy, "reference"),
    ]
    out("\nstep                               time        note")
    for label, seconds, note in rows:
        out(f"{label:<34} {seconds * 1e3:9.3f} ms  {note}")
    out("\nresult: " + ("OK, interpreter and C agree with NumPy" if ok else "MISMATCH"))
    return 0 if ok else 1


def _load(path: str) -> Any:
    return script.parse(Path(path).read_text(), filename=path)


def _print_file(args: argparse.Namespace) -> int:
    print(_load(args.file))
    return 0


def _build_file(args: argparse.Namespace) -> int:
    print(driver.generate_c_source(_load(args.file)))
    return 0


def _report(message: str) -> int:
    """Print an error for the user (no traceback) and return the exit status."""
    print(f"tessel: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tessel` console script."""
    parser = argparse.ArgumentParser(prog="tessel", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="parse, run and compile the 127x127x127 matmul of seeds/003")
    print_cmd = commands.add_parser("print", help="parse a TVMScript file and print it back")
    print_cmd.add_argument("file")
    build_cmd = commands.add_parser("build", help="lower a TVMScript file and print its C source")
    build_cmd.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo()
        return _print_file(args) if args.command == "print" else _build_file(args)
    except TesselError as err:  # a parse error, a lowering or build error: the message is it
        return _report(str(err))
    except OSError as err:  # e.g. the script file cannot be read
        return _report(str(err))


if __name__ == "__main__":
    sys.exit(main())
