"""The state shared by the parts of one printing: names, output lines, highlighted nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.ir.expr import Var
from tessel.script.printer.lines import Lines, mark
from tessel.script.printer.names import NameTable
from tessel.tir.buffer import Buffer


class Context:
    """Names of variables and buffers, the lines printed so far, and what to underline."""

    def __init__(self, highlight: Sequence[Any] = ()) -> None:
        self.names = NameTable()
        self.lines = Lines()
        self._highlight = {id(node): node for node in highlight}
        self.loops: dict[int, Any] = {}  # id(loop var) -> enclosing For (for T.axis.remap)
        # id(data var) -> undeclared buffers over it, printed once the var is defined
        self.views: dict[int, list[Buffer]] = {}

    def is_highlighted(self, *nodes: Any) -> bool:
        """True if any of `nodes` is to be underlined."""
        return any(id(node) in self._highlight for node in nodes if node is not None)

    def marked(self, node: Any, text: str) -> str:
        """`text` flagged for underlining if `node` is highlighted."""
        return mark(text) if self.is_highlighted(node) else text

    def var(self, var: Var) -> str:
        """The printed name of a variable."""
        return self.names.name_of(var, var.name)

    def buffer(self, buffer: Buffer) -> str:
        """The printed name of a buffer."""
        return self.names.name_of(buffer, buffer.name)

    def define_var(self, var: Var) -> str:
        """Name a variable at its definition (in the current scope)."""
        return self.names.define(var, var.name)

    def define_buffer(self, buffer: Buffer, implicit_data: bool = True) -> str:
        """Name a buffer at its definition; its data var prints as `X.data` if created with it."""
        name = self.names.define(buffer, buffer.name)
        if implicit_data and not self.names.is_defined(buffer.data):
            self.names.alias(buffer.data, f"{name}.data")
        return name
