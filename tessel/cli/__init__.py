"""The `tessel` command: `demo`; `compile`, `run`, `bench` and `show` on ONNX models; `print` and
`build` on TVMScript files. Errors are one paragraph for the user, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tessel.cli import demo, models, scripts
from tessel.support.errors import TesselError

run_demo = demo.run_demo
MATMUL_127 = demo.MATMUL_127  # the seed's matmul, as a kernel author writes it


def _report(message: str) -> int:
    """Print an error for the user (no traceback) and return the exit status."""
    print(f"tessel: {message}", file=sys.stderr)
    return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tessel", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="compile all-MiniLM-L6-v2 and embed sentences; the seed matmul")
    models.add_commands(commands)
    print_cmd = commands.add_parser("print", help="parse a TVMScript file and print it back")
    print_cmd.add_argument("file")
    build_cmd = commands.add_parser("build", help="lower a TVMScript file and print its C source")
    build_cmd.add_argument("file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tessel` console script."""
    args = _parser().parse_args(argv)
    handlers = {
        "demo": lambda _: run_demo(),
        "print": scripts.print_file,
        "build": scripts.build_file,
    }
    handlers.update(models.HANDLERS)
    try:
        status = handlers[args.command](args)
        sys.stdout.flush()  # a reader that went away shows here, where it is handled
        return status
    except TesselError as err:  # a parse, import, lowering or build error: the message is it
        return _report(str(err))
    except BrokenPipeError:  # `tessel ... | head` stopped reading: not an error to report
        _silence_stdout()
        return 128 + 13  # as a program killed by SIGPIPE (`cat`, `grep`) exits
    except OSError as err:  # e.g. a file cannot be read: "path: reason", without "[Errno 2]"
        if err.filename is not None and err.strerror:
            return _report(f"{err.filename}: {err.strerror}")
        return _report(str(err))
    except models.MODEL_ERRORS as err:  # a file that is not a valid ONNX model
        return _report(f"cannot read the model: {err}")


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush into the closed pipe does not
    print `BrokenPipeError` (the recipe of Python's `signal` documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's capture): nothing to flush
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
