"""Printing lowered TensorIR expressions as C expressions with the IR's semantics.

Narrow integer results are cast back to their type (C promotes int8/int16 arithmetic to int),
floor division/modulo and min/max go through prelude helpers, and every subexpression is
parenthesised so C precedence never matters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.codegen.c_names import NameScope
from tessel.codegen.c_types import c_type, float_literal, int_literal, reject_vector, type_suffix
from tessel.codegen.errors import CodegenError
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import method_name
from tessel.support.dtype import DataType
from tessel.support.names import is_c_identifier
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad

_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.Mod: "%"}
_HELPER_OPS = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "min", E.Max: "max"}
_DIVISIONS = {E.Div: "truncdiv", E.Mod: "truncmod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}
# The per-call status that checked divisions write (c_prelude.py); user names never start with
# `tessel_`, so this name is free in every function.
STATUS = "tessel_status"
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
            "shift_left": "<<", "shift_right": ">>"}  # fmt: skip
# NumPy rounds halfway cases to even; C's round() rounds them away from zero.
_LIBM_NAMES = {"round": "nearbyint"}
_PRELUDE_MATH = ("sigmoid", "rsqrt", "exp10")


def c_string(text: str) -> str:
    """A C string literal holding `text` (UTF-8; non-printable bytes as octal escapes)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def is_checked_division(node: object) -> bool:
    """True for an integer division or modulo whose divisor may be 0, or -1 (overflow for the
    minimum of a signed type): C would trap, so it goes through a checked prelude helper."""
    if not isinstance(node, E.BinaryOp) or type(node) not in _DIVISIONS:
        return False
    if not node.dtype.is_integer:
        return False
    divisor = node.b
    if not isinstance(divisor, E.IntImm):
        return True
    return divisor.value == 0 or (divisor.value == -1 and divisor.dtype.is_int)


class ExprPrinter:
    """C text for expressions, using `names` for variables."""

    def __init__(self, names: NameScope) -> None:
        self.names = names
        self.checked_divisions = 0  # how many checked division helpers were printed

    def expr(self, node: PrimExpr) -> str:
        """The C expression for `node`."""
        method = method_name(type(self), type(node), "expr_")
        if method is None:
            raise CodegenError(
                f"the C backend cannot print `{type(node).__name__}` nodes yet",
                rule="codegen.unsupported-node",
            )
        return getattr(self, method)(node)

    def expr_Var(self, node: E.Var) -> str:
        return self.names.name_of(node)

    def expr_IntImm(self, node: E.IntImm) -> str:
        return int_literal(node.value, node.dtype)

    def expr_FloatImm(self, node: E.FloatImm) -> str:
        return float_literal(node.value, node.dtype)

    def expr_StringImm(self, node: E.StringImm) -> str:
        return c_string(node.value)

    def expr_Cast(self, node: E.Cast) -> str:
        return f"(({c_type(node.dtype)})({self.expr(node.value)}))"

    def expr_BinaryOp(self, node: E.BinaryOp) -> str:
        a, b = self.expr(node.a), self.expr(node.b)
        if is_checked_division(node):
            self.checked_divisions += 1
            helper = f"tessel_checked_{_DIVISIONS[type(node)]}_{type_suffix(node.dtype)}"
            return f"{helper}({a}, {b}, &{STATUS})"
        if type(node) in _HELPER_OPS:
            return f"tessel_{_HELPER_OPS[type(node)]}_{type_suffix(node.dtype)}({a}, {b})"
        if isinstance(node, E.Mod) and node.dtype.is_float:
            return self._math_call("fmod", node.dtype, (a, b))
        return _wrap_narrow(f"({a} {_INFIX[type(node)]} {b})", node.dtype)

    def expr_CmpOp(self, node: E.CmpOp) -> str:
        c_type(node.a.dtype)  # rejects vector comparisons clearly
        return f"({self.expr(node.a)} {node.symbol} {self.expr(node.b)})"

    def expr_And(self, node: E.And) -> str:
        return f"({self.expr(node.a)} && {self.expr(node.b)})"

    def expr_Or(self, node: E.Or) -> str:
        return f"({self.expr(node.a)} || {self.expr(node.b)})"

    def expr_Not(self, node: E.Not) -> str:
        return f"(!{self.expr(node.a)})"

    def expr_Select(self, node: E.Select) -> str:
        c_type(node.dtype)
        condition = self.expr(node.condition)
        return f"({condition} ? {self.expr(node.true_value)} : {self.expr(node.false_value)})"

    def expr_Let(self, node: E.Let) -> str:
        # A GCC/Clang statement expression: C has no let expression.
        value = self.expr(node.value)
        name = self.names.bind(node.var)
        return f"({{ {c_type(node.var.dtype)} {name} = {value}; {self.expr(node.body)}; }})"

    def expr_Ramp(self, node: E.Ramp) -> str:
        return c_type(node.dtype)  # raises the vector error

    def expr_Broadcast(self, node: E.Broadcast) -> str:
        return c_type(node.dtype)  # raises the vector error

    def expr_BufferLoad(self, node: BufferLoad) -> str:
        if node.predicate is not None:
            reject_vector(f"a predicated load from `{node.buffer.name}`")
        c_type(node.dtype)  # rejects a vector load
        return f"{self.buffer_pointer(node.buffer)}[{self.flat_index(node.buffer, node.indices)}]"

    def buffer_pointer(self, buffer: Any) -> str:
        """The C pointer through which `buffer` is accessed (cast if the view's type differs)."""
        pointer = self.names.name_of(buffer.data)
        annotation = buffer.data.type_annotation
        if annotation is not None and annotation.element_type == buffer.dtype:
            return pointer
        return f"(({c_type(buffer.dtype)}*){pointer})"

    def flat_index(self, buffer: Any, indices: tuple[PrimExpr, ...]) -> str:
        """The single index of a flattened access."""
        if len(indices) != 1:
            raise CodegenError(
                f"access to `{buffer.name}` has {len(indices)} indices; the C backend needs "
                "flat (1-D) accesses",
                rule="codegen.not-flattened",
                hint="lower the function with tessel.transform.lower (it runs FlattenBuffer)",
            )
        return self.expr(indices[0])

    def expr_Call(self, node: E.Call) -> str:
        if not isinstance(node.op, E.Op):
            raise CodegenError(
                f"calls of module functions (`{node.op.name_hint}`) are not supported yet",
                rule="codegen.call-global",
            )
        short = node.op.name.removeprefix("tir.")
        printer = _CALL_PRINTERS.get(short)
        if printer is not None:
            return printer(self, node)
        if short in builtin.MATH_UNARY or short in builtin.MATH_BINARY:
            return self._math(short, node)
        raise CodegenError(f"the C backend does not support `{node.op.name}`", rule="codegen.op")

    def _math(self, name: str, node: E.Call) -> str:
        args = tuple(self.expr(a) for a in node.args)
        if name in _PRELUDE_MATH:
            return f"tessel_{name}_{type_suffix(node.dtype)}({', '.join(args)})"
        return self._math_call(_LIBM_NAMES.get(name, name), node.dtype, args)

    def _math_call(self, name: str, dtype: DataType, args: tuple[str, ...]) -> str:
        c_type(dtype)
        suffix = "f" if dtype.bits == 32 else ""
        return f"{name}{suffix}({', '.join(args)})"

    def _if_then_else(self, node: E.Call) -> str:
        condition, true_value, false_value = (self.expr(a) for a in node.args)
        return f"({condition} ? {true_value} : {false_value})"

    def _float_test(self, node: E.Call) -> str:
        return f"((bool){node.op.name.removeprefix('tir.')}({self.expr(node.args[0])}))"

    def _bitwise(self, node: E.Call) -> str:
        symbol = _BITWISE[node.op.name.removeprefix("tir.")]
        a, b = (self.expr(x) for x in node.args)
        return f"(({c_type(node.dtype)})({a} {symbol} {b}))"

    def _bitwise_not(self, node: E.Call) -> str:
        return f"(({c_type(node.dtype)})(~{self.expr(node.args[0])}))"

    def _likely(self, node: E.Call) -> str:
        return f"__builtin_expect(!!{self.expr(node.args[0])}, 1)"

    def _call_extern(self, node: E.Call) -> str:
        callee = node.args[0] if node.args else None
        name: object = callee.value if isinstance(callee, E.StringImm) else callee
        if not is_c_identifier(name):
            raise CodegenError(
                f"call_extern needs the name of a C function, got {name!r}",
                rule="codegen.call-extern",
                hint="a C identifier: ASCII letters, digits and `_`, not starting with a digit, "
                "and not a C keyword",
            )
        args = ", ".join(self.expr(a) for a in node.args[1:])
        return f"{name}({args})"

    def _undef(self, node: E.Call) -> str:
        raise CodegenError(
            "T.undef() reached code generation: its value would be read at run time",
            rule="codegen.undef",
            hint="T.undef() may only be stored (and such stores are removed)",
        )


def _wrap_narrow(text: str, dtype: DataType) -> str:
    """Cast an int8/int16 (or uint8/uint16) result back: C computes it in `int`."""
    c_type(dtype)
    if (dtype.is_integer and dtype.bits < 32) or dtype.is_bool:
        return f"(({c_type(dtype)}){text})"
    return text


_CALL_PRINTERS: dict[str, Callable[[ExprPrinter, E.Call], str]] = {
    "if_then_else": ExprPrinter._if_then_else,
    "isnan": ExprPrinter._float_test,
    "isinf": ExprPrinter._float_test,
    "isfinite": ExprPrinter._float_test,
    "bitwise_and": ExprPrinter._bitwise,
    "bitwise_or": ExprPrinter._bitwise,
    "bitwise_xor": ExprPrinter._bitwise,
    "shift_left": ExprPrinter._bitwise,
    "shift_right": ExprPrinter._bitwise,
    "bitwise_not": ExprPrinter._bitwise_not,
    "likely": ExprPrinter._likely,
    "call_extern": ExprPrinter._call_extern,
    "undef": ExprPrinter._undef,
}
