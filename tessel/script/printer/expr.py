"""Expressions, with Python's operator precedence deciding where parentheses go."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.ir import expr as E
from tessel.ir.functor import pending_post_order
from tessel.ir.node import Node, field_names
from tessel.ir.target import TargetValue
from tessel.script.printer.context import Context
from tessel.script.printer.literals import (
    annotation_value,
    dtype_literal,
    float_literal,
    int_literal,
    quote,
)
from tessel.tir import builtin, gpu_builtin
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.reduce_expr import CommReducer

# Python's precedence levels (higher binds tighter).
OR, AND, NOT, CMP, ADD, MUL, UNARY, ATOM = 1, 2, 3, 4, 9, 10, 11, 13

_INFIX: dict[type, tuple[str, int]] = {
    E.Add: ("+", ADD),
    E.Sub: ("-", ADD),
    E.Mul: ("*", MUL),
    E.FloorDiv: ("//", MUL),
    E.FloorMod: ("%", MUL),
    E.EQ: ("==", CMP),
    E.NE: ("!=", CMP),
    E.LT: ("<", CMP),
    E.LE: ("<=", CMP),
    E.GT: (">", CMP),
    E.GE: (">=", CMP),
    E.And: ("and", AND),
    E.Or: ("or", OR),
}
_FUNCTION_FORM: dict[type, str] = {E.Min: "T.min", E.Max: "T.max", E.Mod: "T.truncmod"}
# Calls printed with their dtype as the first argument.
_DTYPE_FIRST_CALLS = {
    "tir.call_extern": "T.call_extern",
    "tir.call_pure_extern": "T.call_pure_extern",
}


class ExprPrinter:
    """Prints PrimExprs (and the few other nodes that appear inside them) as script text."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._done: dict[int, tuple[str, int]] | None = None  # while printing: by node id
        self._handlers: dict[type, Callable[[Any], tuple[str, int]]] = {
            E.Var: self._var,
            E.IntImm: self._int,
            E.FloatImm: self._float,
            E.StringImm: lambda e: (quote(e.value), ATOM),
            E.BinaryOp: self._binary,
            E.CmpOp: self._binary,
            E.And: self._binary,
            E.Or: self._binary,
            E.Not: self._not,
            E.Div: self._div,
            E.Cast: lambda e: (f"T.Cast({dtype_literal(e.dtype)}, {self.text(e.value)})", ATOM),
            E.Select: lambda e: (
                self.call("T.Select", e.condition, e.true_value, e.false_value),
                ATOM,
            ),
            E.Ramp: lambda e: (self.call("T.Ramp", e.base, e.stride, e.lanes), ATOM),
            E.Broadcast: lambda e: (self.call("T.Broadcast", e.value, e.lanes), ATOM),
            E.Let: self._let,
            E.Call: self._call,
            BufferLoad: self._load,
            Buffer: lambda b: (self.ctx.buffer(b), ATOM),
            E.Range: lambda r: (self.call("T.Range", r.min, end_of(r.min, r.extent)), ATOM),
            E.Op: lambda op: (op_function(op) or f"T.Op({quote(op.name)})", ATOM),
            E.GlobalVar: lambda gv: (f"I.GlobalVar({quote(gv.name_hint)})", ATOM),
            CommReducer: self._comm_reducer,
            TargetValue: lambda t: (f"T.target({annotation_value(t.config, self.text)})", ATOM),
        }

    def text(self, expr: Any) -> str:
        """`expr` as a self-contained piece of script (no enclosing parentheses needed)."""
        return self._doc(expr)[0]

    def call(self, function: str, *args: Any) -> str:
        """`function(arg, ...)` with each argument printed (ints as they are)."""
        return f"{function}({', '.join(self.arg(a) for a in args)})"

    def arg(self, value: Any) -> str:
        """One call argument: an expression, or a Python int / str passed through."""
        if isinstance(value, bool | int):
            return str(value)
        if isinstance(value, str):
            return quote(value)
        return self.text(value)

    def _doc(self, expr: Any) -> tuple[str, int]:
        if self._done is not None:
            done = self._done.get(id(expr))
            return self._doc_of(expr) if done is None else done
        # At the top: print every operand first, bottom-up and left to right, so a handler
        # finds its operands printed and a deep expression costs no stack (issue 25).
        self._done = done = {}
        try:
            for node in pending_post_order(expr, _operands, lambda n: id(n) in done):
                done[id(node)] = self._doc_of(node)
            return self._done[id(expr)]
        finally:
            self._done = None

    def _doc_of(self, expr: Any) -> tuple[str, int]:
        handler = self._handler_for(type(expr))
        if handler is None:
            # Nodes of higher layers (te's tensor reads and reductions) print themselves,
            # handed this printer for their operands.
            script_text = getattr(type(expr), "script_text", None)
            if script_text is None:
                return (object.__repr__(expr), ATOM)
            return (script_text(expr, self.text), ATOM)
        text, precedence = handler(expr)
        return (self.ctx.marked(expr, text), precedence)

    def _handler_for(self, cls: type) -> Callable[[Any], tuple[str, int]] | None:
        for klass in cls.__mro__:
            if klass in self._handlers:
                return self._handlers[klass]
        return None

    def operand(self, expr: Any, parent: int, right: bool = False) -> str:
        """`expr` as an operand of an operator of precedence `parent`, parenthesised as needed."""
        text, precedence = self._doc(expr)
        # Equal precedence on the right needs parentheses: a - (b - c), a + (b + c) (the
        # parser folds left). Comparisons chain in Python, so a comparison operand always does.
        needs = precedence < parent or (precedence == parent and (right or parent == CMP))
        return f"({text})" if needs else text

    def _var(self, var: E.Var) -> tuple[str, int]:
        return (self.ctx.var(var), ATOM)

    def _int(self, imm: E.IntImm) -> tuple[str, int]:
        text = int_literal(imm.value, imm.dtype)
        return (text, UNARY if text.startswith("-") else ATOM)

    def _float(self, imm: E.FloatImm) -> tuple[str, int]:
        return (float_literal(imm.value, imm.dtype), ATOM)

    def _binary(self, node: Any) -> tuple[str, int]:
        kind = type(node)
        if kind in _FUNCTION_FORM:
            return (self.call(_FUNCTION_FORM[kind], node.a, node.b), ATOM)
        symbol, precedence = _INFIX[kind]
        left = self.operand(node.a, precedence)
        right = self.operand(node.b, precedence, right=True)
        return (f"{left} {symbol} {right}", precedence)

    def _div(self, node: E.Div) -> tuple[str, int]:
        if not node.dtype.is_float:
            return (self.call("T.truncdiv", node.a, node.b), ATOM)
        left = self.operand(node.a, MUL)
        return (f"{left} / {self.operand(node.b, MUL, right=True)}", MUL)

    def _not(self, node: E.Not) -> tuple[str, int]:
        return (f"not {self.operand(node.a, NOT)}", NOT)

    def _let(self, node: E.Let) -> tuple[str, int]:
        # The script declares the variable beforehand (`v = T.int32()`, see free_vars).
        return (self.call("T.let", node.var, node.value, node.body), ATOM)

    def _call(self, node: E.Call) -> tuple[str, int]:
        if isinstance(node.op, E.GlobalVar):  # TVM's spelling; the class is always `Module`
            args = ", ".join(self.arg(a) for a in node.args)
            return (f"Module.{node.op.name_hint}({args})", ATOM)
        if node.op.name in _DTYPE_FIRST_CALLS:
            args = ", ".join(self.arg(a) for a in node.args)
            function = _DTYPE_FIRST_CALLS[node.op.name]
            return (f"{function}({dtype_literal(node.dtype)}, {args})", ATOM)
        if node.op is builtin.type_annotation_op:
            return (f"T.type_annotation({dtype_literal(node.dtype)})", ATOM)
        if node.op is builtin.call_packed_op:
            args = ", ".join(self.arg(a) for a in node.args)
            dtype = "" if str(node.dtype) == "int32" else f", dtype={dtype_literal(node.dtype)}"
            return (f"T.call_packed({args}{dtype})", ATOM)
        if node.op.name == "tir.undef":
            return (undef_text(node), ATOM)
        if node.op is builtin.reinterpret_op or node.op in gpu_builtin.DTYPE_FIRST_OPS:
            args = "".join(f", {self.arg(a)}" for a in node.args)
            function = "T." + node.op.name.removeprefix("tir.")
            return (f"{function}({dtype_literal(node.dtype)}{args})", ATOM)
        if gpu_builtin.is_gpu_intrinsic(node.op):
            name = node.op.name.removeprefix("tir.")
            args = ", ".join(self.arg(a) for a in node.args)
            inferred = gpu_builtin.default_dtype(name, node.args)
            dtype = "" if node.dtype == inferred else f", dtype={dtype_literal(node.dtype)}"
            return (f"T.{name}({args}{dtype})", ATOM)
        function = op_function(node.op)
        if function is None:
            args = "".join(f", {self.arg(a)}" for a in node.args)
            name = quote(node.op.name)
            return (f"T.call_intrin({dtype_literal(node.dtype)}, {name}{args})", ATOM)
        return (self.call(function, *node.args), ATOM)

    def _comm_reducer(self, reducer: CommReducer) -> tuple[str, int]:
        """`T.comm_reducer(lambda x, y: x + y, [T.float32(0)])`, its parameters named in a
        scope of their own."""
        with self.ctx.names.scope():
            params = ", ".join(self.ctx.define_var(v) for v in (*reducer.lhs, *reducer.rhs))
            results = [self.text(r) for r in reducer.result]
        body = results[0] if len(results) == 1 else f"({', '.join(results)})"
        identity = ", ".join(self.text(v) for v in reducer.identity_element)
        return (f"T.comm_reducer(lambda {params}: {body}, [{identity}])", ATOM)

    def _load(self, load: BufferLoad) -> tuple[str, int]:
        name = self.ctx.buffer(load.buffer)
        if load.predicate is not None:
            indices = ", ".join(self.text(i) for i in load.indices)
            return (f"{name}.vload([{indices}], predicate={self.text(load.predicate)})", ATOM)
        return (f"{name}[{self.indices(load.indices)}]", ATOM)

    def indices(self, indices: tuple[Any, ...]) -> str:
        """Subscript text: `i, j`; `()` for a rank-0 buffer."""
        if not indices:
            return "()"
        return ", ".join(self.text(i) for i in indices)


def _operands(node: Any) -> list[Node]:
    """The expressions a handler prints under `node` (none under a buffer or another root)."""
    operands: list[Node] = []
    if not isinstance(node, E.PrimExpr):
        return operands
    for name in field_names(type(node)):
        value = getattr(node, name)
        values = value if isinstance(value, tuple) else (value,)
        operands.extend(v for v in values if isinstance(v, E.PrimExpr))
    return operands


def undef_text(call: E.Call) -> str:
    """`T.undef()` (int32, or the dtype of the buffer it is stored to), else with its dtype."""
    if str(call.dtype) == "int32":
        return "T.undef()"
    return f"T.undef(dtype={dtype_literal(call.dtype)})"


def op_function(op: E.Op) -> str | None:
    """`T.exp` for the builtin op "tir.exp"; None for ops the script has no function for."""
    if op.name in builtin.ALL_OPS and op.name.startswith("tir."):
        return "T." + op.name[len("tir.") :]
    return None


def end_of(begin: E.PrimExpr, extent: E.PrimExpr) -> E.PrimExpr:
    """The end `begin + extent` of a range, as the parser's `end - begin` will give it back.

    A parsed `range(a, b)` has extent `b - a`; printing `b` again keeps the round trip exact.
    """
    if is_zero(begin):
        return extent
    if isinstance(extent, E.Sub) and same_expr(extent.b, begin):
        return extent.a
    if isinstance(begin, E.IntImm) and isinstance(extent, E.IntImm):
        return E.IntImm(begin.dtype, begin.value + extent.value)
    return E.Add(begin, extent)


def is_zero(expr: Any) -> bool:
    """True for an integer constant 0."""
    return isinstance(expr, E.IntImm) and expr.value == 0 and not expr.dtype.is_bool


def is_one(expr: Any) -> bool:
    """True for an integer constant 1."""
    return isinstance(expr, E.IntImm) and expr.value == 1 and not expr.dtype.is_bool


def same_expr(a: Any, b: Any) -> bool:
    """Structural equality where variables must be the same object (free variables match)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, E.Var | Buffer):
        return False
    if isinstance(a, E.IntImm | E.FloatImm):
        return a.dtype == b.dtype and a.value == b.value
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b, strict=True))
    if not isinstance(a, Node):
        return a == b
    return all(same_expr(getattr(a, f), getattr(b, f)) for f in field_names(type(a)))
