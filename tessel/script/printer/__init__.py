"""The TVMScript printer: any IR node as script text that the parser reads back.

`script(node, highlight=[...])` underlines the lines (or expressions) printing the given
nodes with `^` carets, which is how ScheduleError points at the loop or block at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.ir.expr import PrimExpr, Range
from tessel.ir.module import IRModule
from tessel.ir.node import Node
from tessel.script.printer.buffer import buffer_arguments, region_text
from tessel.script.printer.context import Context
from tessel.script.printer.function import IR_HEADER, TIR_HEADER, print_module, print_prim_func
from tessel.script.printer.literals import quote
from tessel.script.printer.stmt import StmtPrinter
from tessel.tir.block import IterVar, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Stmt

_ITER_TYPE_NAMES = {
    "S": "DataPar",
    "R": "CommReduce",
    "O": "Ordered",
    "X": "Opaque",
    "T": "ThreadIndex",
}


def script(node: Any, *, highlight: Sequence[Node] = ()) -> str:
    """`node` printed in the TVMScript dialect; lines printing `highlight` nodes get carets."""
    ctx = Context(highlight)
    lines = ctx.lines
    if isinstance(node, IRModule):
        for header in (IR_HEADER, TIR_HEADER, ""):
            lines.emit(header)
        print_module(ctx, node)
    elif isinstance(node, PrimFunc):
        for header in (TIR_HEADER, ""):
            lines.emit(header)
        print_prim_func(ctx, node)
    elif isinstance(node, Stmt):
        StmtPrinter(ctx).print(node)
    else:
        lines.emit(_one_line(ctx, node))
    return lines.render()


def _one_line(ctx: Context, node: Any) -> str:
    """Nodes that print as one line: expressions, buffers, regions, ranges, iterators."""
    printer = StmtPrinter(ctx)
    expr = printer.expr
    if isinstance(node, Buffer):
        arguments = buffer_arguments(expr, node, scope=True)
        return ctx.marked(node, f"{ctx.buffer(node)} = T.Buffer({arguments})")
    if isinstance(node, BufferRegion):
        return region_text(expr, node)
    if isinstance(node, MatchBufferRegion):
        source, arguments = region_text(expr, node.source), buffer_arguments(expr, node.buffer)
        text = f"{ctx.buffer(node.buffer)} = T.match_buffer({source}, {arguments})"
        return ctx.marked(node, text)
    if isinstance(node, IterVar):
        kind = quote(_ITER_TYPE_NAMES[node.iter_type.value])
        dom = expr.text(node.dom)
        return ctx.marked(node, f'T.iter_var({ctx.var(node.var)}, {dom}, {kind}, "")')
    if isinstance(node, PrimExpr | Range | Node):
        return expr.text(node)
    return repr(node)


__all__ = ["script"]
