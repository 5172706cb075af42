"""Tessel: a deep-learning compiler in Python.

`import tessel` is cheap: the subpackages (`tessel.graph`, `tessel.te`, ...) and the names
re-exported here (`tessel.build`, `tessel.lower`) load on first use (PEP 562), so a deployed
model that needs only `tessel.runtime` never loads the compiler (islpy, the schedules).
"""

import importlib as _importlib
from typing import Any as _Any

from tessel.support.printer_slot import install_printer


def _show(node: _Any) -> str:
    """str() of an IR node: graph IR in Relay's text format, everything else as TVMScript."""
    from tessel.graph.text import is_graph_node, pretty_print
    from tessel.script.printer import script

    return pretty_print(node) if is_graph_node(node) else script(node)


install_printer(_show)  # the printer slot: it imports nothing until a node is printed

_SUBMODULES = frozenset(
    {
        "arith",
        "cli",
        "codegen",
        "driver",
        "frontend",
        "graph",
        "ir",
        "runtime",
        "schedule",
        "script",
        "support",
        "te",
        "testing",
        "tir",
        "topi",
        "transform",
    }
)
# The names re-exported here: name -> the module that defines it.
_EXPORTS = {"build": "tessel.driver", "lower": "tessel.transform"}

__all__ = ["build", "lower"]


def __getattr__(name: str) -> _Any:
    """Load a subpackage, or a re-exported name, on first use (PEP 562)."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # found directly from now on
        return value
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")  # the import binds the attribute
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES, *_EXPORTS})
