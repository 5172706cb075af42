"""Relay's text format for the graph IR (docs/architecture.md §8): `parse`, `parse_expr`, `astext`.

    #[version = "0.0.5"]
    def @main(%x: Tensor[(1, 3), float32], %w: Tensor[(4, 3), float32]) {
      %0 = nn.dense(%x, %w, units=4);
      nn.relu(%0)
    }

Printing then parsing gives structurally equal IR; malformed text raises a ParseError with the
line, column and a caret.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tessel.graph.expr import Expr, Function
from tessel.graph.text.metadata import MetaTable
from tessel.graph.text.parser import SUPPORTED_VERSION, Parser
from tessel.graph.text.printer import GraphPrinter, type_text
from tessel.graph.ty import Type
from tessel.ir.module import IRModule
from tessel.script.printer import script

HEADER = f'#[version = "{SUPPORTED_VERSION}"]'
_OMITTED = (
    "/* The metadata section was omitted (show_meta_data=False): parse with init_meta_table. */"
)


def parse(
    text: str,
    init_meta_table: Mapping[str, Sequence[Any]] | None = None,
    *,
    source_name: str = "<graph>",
    init_module: IRModule | None = None,
) -> IRModule:
    """The module of `def`s in `text`.

    `init_meta_table` ({"relay.Constant": [arrays or Constants], "VirtualDevice":
    [VirtualDevices]}) resolves `meta[...]` references of the kinds the text's `#[metadata]`
    section (if any) lacks; `init_module` supplies functions the text calls but does not
    define (PrimFuncs, say), and those it does not redefine are kept.
    """
    return Parser(text, source_name, init_meta_table, init_module).module()


def parse_expr(
    text: str,
    init_meta_table: Mapping[str, Sequence[Any]] | None = None,
    *,
    source_name: str = "<graph>",
) -> Expr:
    """One expression (`fn (%x) { ... }`, `free_var %x: T; f(%x)`, ...), without `def`s."""
    return Parser(text, source_name, init_meta_table, None).expression()


def astext(node: Any, show_meta_data: bool = True, show_types: bool = False) -> str:
    """`node` (an IRModule, an expression or a type) in the text format, with the version
    header; `show_meta_data` appends the `#[metadata]` section (tensor constants, devices),
    `show_types` adds `/* ty=... */` after each typed expression."""
    return _render(node, show_meta_data, show_types, header=True)


def pretty_print(node: Any) -> str:
    """`str()` of a graph node: the text format without the header or the metadata section."""
    return _render(node, show_meta_data=False, show_types=False, header=False)


def is_graph_node(node: Any) -> bool:
    """True for graph expressions, graph types and modules holding a graph function."""
    if isinstance(node, IRModule):
        return any(isinstance(f, Expr) for f in node.functions.values())
    return isinstance(node, Expr | Type)


def _render(node: Any, show_meta_data: bool, show_types: bool, header: bool) -> str:
    if isinstance(node, Type):
        return type_text(node)
    meta = MetaTable()
    printer = GraphPrinter(meta, show_types)
    if isinstance(node, IRModule):
        parts = ["\n\n".join(_module_item(printer, gv.name_hint, f) for gv, f in node.items())]
    elif isinstance(node, Expr):
        parts = [printer.expression(node)]
    else:
        raise TypeError(
            f"astext prints graph IR (a module, expression or type), not {type(node).__name__}"
        )
    if header:
        parts.insert(0, HEADER)
    if meta.has_entries():
        parts.append("#[metadata]\n" + meta.to_json() if show_meta_data else _OMITTED)
    return "\n".join(parts) + ("\n" if header else "")


def _module_item(printer: GraphPrinter, name: str, func: Any) -> str:
    if isinstance(func, Function):
        return printer.definition(name, func)
    lines = script(func).splitlines()
    kind = type(func).__name__
    note = f"// @{name} is a {kind} (TVMScript below); parse(..., init_module=) keeps it"
    return "\n".join([note, *(f"// {line}" for line in lines)])


__all__ = ["astext", "is_graph_node", "parse", "parse_expr", "pretty_print"]
