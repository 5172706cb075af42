"""The `tessel` command: `demo`; `compile`, `run`, `bench` and `show` on ONNX models; `print` and
`build` on TVMScript files. Errors are one paragraph for the user, never a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tessel.cli import arguments

# `tessel --help` must answer at once: this module imports only the parser (tessel.cli.arguments),
# and a command's module, with the compiler it needs, is imported when that command runs.
# Names of the command modules, found here on first use (PEP 562): name -> (module, attribute).
# MATMUL_127: RFC 77's matmul, as a kernel author writes it.
_LAZY = {
    "run_demo": ("tessel.cli.demo", "run_demo"),
    "MATMUL_127": ("tessel.cli.demo", "MATMUL_127"),
}
_SUBMODULES = frozenset({"arguments", "demo", "minilm", "models", "progress", "scripts"})


def __getattr__(name: str) -> Any:
    """`run_demo`, `MATMUL_127` and the submodules, loaded on first use (PEP 562)."""
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module), attribute)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _report(message: str) -> int:
    """Print an error for the user (no traceback) and return the exit status."""
    print(f"tessel: {message}", file=sys.stderr)
    return 1


def _parser() -> argparse.ArgumentParser:
    return arguments.parser(__doc__)


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs `command`; only its own module is imported, here."""
    if command == "demo":
        from tessel.cli.demo import run_demo

        return lambda _: run_demo()
    if command in ("print", "build"):
        from tessel.cli import scripts

        return scripts.print_file if command == "print" else scripts.build_file
    from tessel.cli.models import HANDLERS

    return HANDLERS[command]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tessel` console script."""
    args = _parser().parse_args(argv)  # --help, and a wrong argument, end here: nothing imported
    # The errors reported as messages: Tessel's, and the ONNX reader's (protobuf's DecodeError).
    from tessel.cli.models import MODEL_ERRORS
    from tessel.support.errors import TesselError

    try:
        status = _handler(args.command)(args)
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
    except MODEL_ERRORS as err:  # a file that is not a valid ONNX model
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
