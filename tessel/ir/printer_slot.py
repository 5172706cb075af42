"""The printer slot: `tessel/__init__` installs the script printer so `str(node)` shows TVMScript.

This keeps `ir` and `tir` from importing `script` (dependency inversion, DESIGN §1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_printer: list[Callable[[Any], str]] = []


def install_printer(printer: Callable[[Any], str]) -> None:
    """Make `printer` the function behind `str()` of every IR node."""
    _printer[:] = [printer]


def print_node(node: Any) -> str:
    """Print `node` with the installed printer, or its repr if none is installed."""
    if _printer:
        return _printer[0](node)
    return object.__repr__(node)
