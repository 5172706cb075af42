"""For loops: `T.grid` for perfect serial nests, `range` for serial loops, `T.<kind>` otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.ir.expr import Var
from tessel.ir.functor import post_order
from tessel.script.printer.expr import end_of, is_zero
from tessel.script.printer.literals import quote
from tessel.tir.stmt import For, ForKind

if TYPE_CHECKING:
    from tessel.script.printer.stmt import StmtPrinter

_KIND_FUNCTION = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}


def is_plain_serial(loop: Any) -> bool:
    """A serial loop from 0 without annotations: it can join a `T.grid`."""
    return (
        isinstance(loop, For)
        and loop.kind is ForKind.SERIAL
        and is_zero(loop.min)
        and not loop.annotations
    )


def grid_loops(loop: For) -> list[For]:
    """The perfect nest of plain serial loops starting at `loop` (just `loop` if none)."""
    nest = [loop]
    while is_plain_serial(nest[-1]) and is_plain_serial(nest[-1].body):
        inner = nest[-1].body
        outer_vars = {id(n.loop_var) for n in nest}
        # `T.grid(n, i)` could not name `i` before the loop defines it.
        if any(isinstance(n, Var) and id(n) in outer_vars for n in post_order(inner.extent)):
            break
        nest.append(inner)
    return nest if is_plain_serial(loop) else [loop]


class LoopPrinter:
    """Prints For statements for a StmtPrinter."""

    def __init__(self, printer: StmtPrinter) -> None:
        self.printer = printer
        self.ctx = printer.ctx

    def print_for(self, loop: For) -> None:
        """Print a loop (or a whole `T.grid` nest) and its body."""
        nest = grid_loops(loop)
        if len(nest) > 1:
            head = "T.grid(" + ", ".join(self.printer.expr.text(n.extent) for n in nest) + ")"
            if self.ctx.is_highlighted(*nest[1:]):
                self.ctx.lines.highlight_next_line()
        else:
            head = self.iterator(loop)
        with self.ctx.names.scope():
            names = [self.ctx.define_var(n.loop_var) for n in nest]
            self.printer.emit(f"for {', '.join(names)} in {head}:")
            for n in nest:
                self.ctx.loops[id(n.loop_var)] = n
            self.printer.block_body(nest[-1].body)
            for n in nest:
                del self.ctx.loops[id(n.loop_var)]

    def iterator(self, loop: For) -> str:
        """`range(n)`, `range(a, b)`, `T.parallel(n)`, `T.serial(n, annotations={...})`, ..."""
        expr = self.printer.expr
        bounds = [expr.text(loop.extent)]
        if not is_zero(loop.min):
            bounds = [expr.text(loop.min), expr.text(end_of(loop.min, loop.extent))]
        if loop.kind is ForKind.SERIAL and not loop.annotations:
            return f"range({', '.join(bounds)})"
        if loop.thread_binding is not None:
            bounds.append(f"thread={quote(loop.thread_binding)}")
        if loop.annotations:
            bounds.append(f"annotations={self.printer.value(loop.annotations)}")
        return f"{_KIND_FUNCTION[loop.kind]}({', '.join(bounds)})"
