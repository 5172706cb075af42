"""The printer slot: the function behind `str()` of every IR node.

`tessel/__init__` fills it with a printer that shows graph IR in Relay's text format and
everything else as TVMScript, so `ir` and `tir` never import `script` or `graph` (dependency
inversion). It lives in the bottom layer so that filling it imports nothing else: a plain
`import tessel` (or `import tessel.runtime`, all a deployed model needs) loads no IR.
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


__all__ = ["install_printer", "print_node"]
