"""The one table of the importer: ONNX op type -> converter, per range of the model's opset.

Each module of tessel.frontend.onnx.converters declares the operators it converts and the opsets
of each (its `TABLE`, tessel.frontend.onnx.opsets); this module joins every such TABLE. The
model's opset for the op's domain picks the entry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from types import ModuleType

import onnx

from tessel.frontend.onnx import converters
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Converter, Entry

__all__ = ["CONVERTERS", "FIRST_OPSET", "LAST_OPSET", "lookup", "opset_range",
           "supported_operators"]  # fmt: skip


def _converter_modules() -> tuple[ModuleType, ...]:
    """The modules of the converters package that declare a TABLE (the others are helpers)."""
    names = sorted(m.name for m in pkgutil.iter_modules(converters.__path__))
    modules = (importlib.import_module(f"{converters.__name__}.{name}") for name in names)
    return tuple(m for m in modules if hasattr(m, "TABLE"))


_MODULES = _converter_modules()


def _introduced(op_type: str) -> int:
    """The opset that introduced `op_type` to ONNX's default domain (0 if ONNX lacks it)."""
    if not onnx.defs.has(op_type, ""):
        return 0
    # The schema at the newest opset, then back through its history to the first version.
    schema = onnx.defs.get_schema(op_type, "")
    while True:
        try:
            schema = onnx.defs.get_schema(op_type, schema.since_version - 1, "")
        except onnx.defs.SchemaError:
            return schema.since_version


def _join() -> dict[str, tuple[Entry, ...]]:
    """Every module's TABLE; an entry starts no earlier than the opset that introduced its op."""
    table: dict[str, tuple[Entry, ...]] = {}
    for module in _MODULES:
        for op_type, entries in module.TABLE.items():
            assert op_type not in table, f"{op_type} is converted by two modules"
            first_defined = _introduced(op_type)
            table[op_type] = tuple(
                (max(first, first_defined), last, converter)
                for first, last, converter in entries
                if last >= first_defined
            )
    return table


CONVERTERS: dict[str, tuple[Entry, ...]] = _join()


def lookup(op_type: str, domain: str, opset: int) -> Converter | None:
    """The converter for `op_type` at the model's `opset`, or None."""
    if domain not in ("", "ai.onnx"):
        return None
    for first, last, converter in CONVERTERS.get(op_type, ()):
        if first <= opset <= last:
            return converter
    return None


def opset_range(op_type: str) -> tuple[int, int] | None:
    """The first and last opsets the importer covers for `op_type`, or None if it never does."""
    entries: Sequence[Entry] = CONVERTERS.get(op_type, ())
    if not entries:
        return None
    return min(e[0] for e in entries), max(e[1] for e in entries)


def supported_operators() -> dict[str, tuple[int, int]]:
    """Every op type the importer converts, with its range of opsets."""
    ranges = {op: opset_range(op) for op in CONVERTERS}
    return {op: r for op, r in sorted(ranges.items()) if r is not None}
