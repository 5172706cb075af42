"""The TVMScript parser: Python `ast` in, TensorIR out (see docs/dialect.md)."""

from tessel.script.parser.entry import ir_module, parse_source, prim_func

__all__ = ["ir_module", "parse_source", "prim_func"]
