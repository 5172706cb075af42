"""The graph text printer: graph IR to Relay's text format, which the parser reads back to
structurally equal IR.

As TVM does, every non-atomic expression in operand position (a call, tuple, projection,
function value or `if`) is named by a `%N = ...;` line before its first use, so a shared
subexpression prints once and the parser rebuilds the same DAG; `layout.py` decides in which
block (scope) each line goes. Operands are bound by an iterative walk, so deep graphs do not
hit Python's recursion limit.
"""

from __future__ import annotations

import re
from typing import Any

from tessel.arith.dims import SymbolNames, dim_text
from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.text.layout import TOP, Layout, is_atom
from tessel.graph.text.literals import attr_text, constant_literal
from tessel.graph.text.metadata import MetaTable
from tessel.graph.traversal import post_order_exprs, read_children
from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.virtual_device import VirtualDevice

INDENT = "  "
_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


def type_text(ty: Type | None, names: SymbolNames | None = None) -> str:
    """A type in the text format; a scalar tensor type prints as its dtype, as Relay does.
    `names` names shape symbols (one per printed text, so two symbols never share a name)."""
    if ty is None or isinstance(ty, IncompleteType):
        return "_"
    if isinstance(ty, TensorType):
        if not ty.shape:
            return ty.dtype
        dims = ", ".join(dim_text(d, names) for d in ty.shape)
        return f"Tensor[({dims}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        fields = [type_text(f, names) for f in ty.fields]
        return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
    if isinstance(ty, FuncType):
        args = ", ".join(type_text(a, names) for a in ty.arg_types)
        return f"fn ({args}) -> {type_text(ty.ret_type, names)}"
    raise TypeError(f"{type(ty).__name__} is not a graph type")


def indent(text: str) -> str:
    return "\n".join(INDENT + line if line else line for line in text.split("\n"))


class GraphPrinter:
    """Prints definitions and expressions; names and `%N` numbers restart per definition."""

    def __init__(self, meta: MetaTable, show_types: bool = False) -> None:
        self.meta, self.show_types = meta, show_types
        self.free_vars: list[Var] = []
        self.symbol_names = SymbolNames()

    def _reset(self, root: Expr) -> None:
        self.layout = Layout(root)
        self.counter = 0
        self.bound: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.used: set[str] = set()

    def definition(self, name: str, func: Function) -> str:
        """`def @name(params) -> ret { body }`."""
        self._reset(func)
        head = f"def @{name}{self._signature(func)} {{"
        return f"{head}\n{indent(self.block(('fn', id(func)), func.body))}\n}}"

    def expression(self, expr: Expr) -> str:
        """A bare expression, its free variables declared first (`free_var %x: T;`)."""
        self._reset(expr)
        self.free_vars = []
        body = self.block(TOP, expr)
        declared = [f"free_var {self.names[id(v)]}{self._annotation(v)};" for v in self.free_vars]
        return "\n".join([*declared, body])

    # -- blocks -----------------------------------------------------------------------------

    def block(self, key: Any, root: Expr, chain: bool = False) -> str:
        """The lines of one block: `let`s and `%N = ...;` lines, then the result. `chain` prints
        `root` (a named `let`) as the block's own chain."""
        lines: list[str] = []
        visited: set[int] = set()
        expr = root
        while isinstance(expr, Let) and ((chain and expr is root) or self.layout.is_inline(expr)):
            self._emit(expr.value, key, lines, visited)
            value = self._text(expr.value) + self._ty(expr.value)
            var = self._define(expr.var)
            lines.append(f"let {var}{self._annotation(expr.var)} = {value};")
            expr = expr.body
        self._emit(expr, key, lines, visited)
        lines.append(self._text(expr) + self._ty(expr))
        return "\n".join(lines)

    def _emit(self, start: Any, key: Any, lines: list[str], visited: set[int]) -> None:
        """Bind, operands first, every expression below `start` whose line goes in `key`."""

        def pending(node: Any) -> bool:  # atoms print as themselves; the rest prints once
            return not (is_atom(node) or id(node) in self.bound or id(node) in visited)

        def walk(node: Any) -> tuple[Expr, ...]:
            return tuple(child for child in read_children(node) if pending(child))

        if not pending(start):
            return
        for node in post_order_exprs(start, walk):
            visited.add(id(node))
            if self.layout.is_bound_in(node, key):
                self._bind(node, lines)

    def _bind(self, node: Expr, lines: list[str]) -> None:
        name = f"%{self.counter}"
        self.counter += 1
        lines.append(f"{name} = {self._inline(node)}{self._ty(node)};")
        self.bound[id(node)] = name

    # -- expressions ------------------------------------------------------------------------

    def _text(self, expr: Any) -> str:
        """A block result or `let` value: its name if it has one, else the expression itself."""
        return self._ref(expr) if is_atom(expr) or id(expr) in self.bound else self._inline(expr)

    def _inline(self, expr: Any) -> str:
        """`expr` itself, its operands by name (they are atoms or bound already)."""
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, Tuple):
            fields = [self._ref(f) for f in expr.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if isinstance(expr, TupleGetItem):
            return f"{self._ref(expr.tuple_value)}.{expr.index}"
        if isinstance(expr, Function):
            signature = self._signature(expr)  # first: it names the parameters the body uses
            body = self.block(("fn", id(expr)), expr.body)
            return f"fn {signature} {{\n{indent(body)}\n}}"
        if isinstance(expr, If):
            then = self.block(("then", id(expr)), expr.true_branch)
            otherwise = self.block(("else", id(expr)), expr.false_branch)
            cond = self._ref(expr.cond)
            return f"if ({cond}) {{\n{indent(then)}\n}} else {{\n{indent(otherwise)}\n}}"
        if isinstance(expr, Let):
            return f"(\n{indent(self.block(('paren', id(expr)), expr, chain=True))}\n)"
        raise TypeError(f"{type(expr).__name__} is not a graph expression")

    def _ref(self, expr: Any) -> str:
        """An operand: an atom's text or the `%N` naming it."""
        if isinstance(expr, Var):
            return self._var(expr)
        if isinstance(expr, GlobalVar):
            return f"@{expr.name_hint}"
        if isinstance(expr, Constant):
            return constant_literal(expr) or self.meta.reference(expr)
        if isinstance(expr, Op):
            return expr.name
        return self.bound[id(expr)]

    def _call(self, call: Call) -> str:
        parts = [self._ref(a) for a in call.args]
        parts += [f"{key}={self._attr(value)}" for key, value in call.attrs.items()]
        return f"{self._ref(call.op)}({', '.join(parts)})"

    def _attr(self, value: Any) -> str:
        """An attribute value; a VirtualDevice goes to the metadata table, as in Relay."""
        if isinstance(value, VirtualDevice):
            return self.meta.device_reference(value)
        return attr_text(value, self.symbol_names)

    def _signature(self, func: Function) -> str:
        """`(%p: T, ..., Attr=value, virtual_device=...) -> ret`, in Relay's order."""
        parts = [f"{self._define(p)}{self._annotation(p)}" for p in func.params]
        parts += [f"{key}={self._attr(value)}" for key, value in func.attrs.items()]
        if func.virtual_device is not None:
            parts.append(f"virtual_device={self.meta.device_reference(func.virtual_device)}")
        ret = (
            f" -> {type_text(func.ret_type, self.symbol_names)}"
            if func.ret_type is not None
            else ""
        )
        return f"({', '.join(parts)}){ret}"

    def _ty(self, expr: Any) -> str:
        checked = getattr(expr, "checked_type", None)
        if not self.show_types or checked is None or isinstance(expr, Var | GlobalVar):
            return ""
        return f" /* ty={type_text(checked, self.symbol_names)} */"

    # -- variable names ---------------------------------------------------------------------

    def _annotation(self, var: Var) -> str:
        """What follows a bound variable's name: ` {virtual_device=...}` and `: type`, if any."""
        text = ""
        if var.virtual_device is not None:
            text = f" {{virtual_device={self.meta.device_reference(var.virtual_device)}}}"
        if var.type_annotation is not None:
            text += f": {type_text(var.type_annotation, self.symbol_names)}"
        return text

    def _define(self, var: Var) -> str:
        """A fresh `%name` for a variable bound here (names are unique within a definition)."""
        base = _NOT_NAME.sub("_", var.name_hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, suffix = base, 0
        while name in self.used:
            suffix += 1
            name = f"{base}{suffix}"
        self.used.add(name)
        self.names[id(var)] = f"%{name}"
        return f"%{name}"

    def _var(self, var: Var) -> str:
        name = self.names.get(id(var))
        if name is None:  # a free variable: declared by `free_var` in a bare expression
            self.free_vars.append(var)
            name = self._define(var)
        return name
