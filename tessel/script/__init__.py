"""TVMScript: `from tessel.script import tir as T, ir as I`, and `parse(text)`."""

from __future__ import annotations

from typing import Any

from tessel.ir.module import IRModule
from tessel.script import ir, tir
from tessel.script.errors import ParseError
from tessel.script.parser.entry import parse_source
from tessel.tir.function import PrimFunc

__all__ = ["ParseError", "ir", "parse", "tir"]


def parse(
    source: str, filename: str = "<string>", extra_vars: dict[str, Any] | None = None
) -> PrimFunc | IRModule:
    """Parse text holding one `@T.prim_func` def or `@I.ir_module` class (T and I predefined)."""
    namespace: dict[str, Any] = {"T": tir, "I": ir, **(extra_vars or {})}
    return parse_source(source, filename, namespace)
