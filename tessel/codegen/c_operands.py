"""The order in which ExprPrinter prints a deep expression: its operands bottom-up, with an
explicit stack, so Python's recursion does not grow with the expression's depth.

A fused chain of elementwise ops is one expression as deep as the chain (FuseOps' max_depth
is 256, and a kernel written by hand may be deeper); printed recursively it took about four
Python frames a level, past the default recursion limit at about 250 levels. Only operands
that the printer prints in the node's own naming scope are walked (not a `Let` body, which
sees the let's binding, nor a load's indices, which N-d accesses rewrite first); the printer
prints those nodes itself, each a recursion of a few frames.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator

from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import pending_post_order
from tessel.tir import builtin

# Calls whose every argument the printer prints as an expression, in order.
_PRINTED_ARGS = frozenset(
    {f"tir.{name}" for name in (*builtin.MATH_UNARY, *builtin.MATH_BINARY)}
    | {f"tir.{name}" for name in ("if_then_else", "isnan", "isinf", "isfinite", "likely")}
    | {f"tir.{name}" for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")}
    | {"tir.shift_left", "tir.shift_right"}
    | {"tessel.exp_flush_below"}  # its argument is the exp's (c_tessel_ops.py)
)

_OPERANDS: dict[type, Callable[[PrimExpr], tuple[PrimExpr, ...]]] = {
    E.BinaryOp: lambda node: (node.a, node.b),
    E.CmpOp: lambda node: (node.a, node.b),
    E.And: lambda node: (node.a, node.b),
    E.Or: lambda node: (node.a, node.b),
    E.Not: lambda node: (node.a,),
    E.Cast: lambda node: (node.value,),
    E.Select: lambda node: (node.condition, node.true_value, node.false_value),
    E.Broadcast: lambda node: (node.value,),
    E.Ramp: lambda node: (node.base, node.stride),
}


def walked_operands(node: PrimExpr) -> tuple[PrimExpr, ...]:
    """The operands of `node` that are printed, in the node's scope, before the node."""
    if isinstance(node, E.Call):
        printed = isinstance(node.op, E.Op) and node.op.name in _PRINTED_ARGS
        return node.args if printed else ()
    for base in type(node).__mro__:
        operands = _OPERANDS.get(base)
        if operands is not None:
            return operands(node)
    return ()


def print_order(root: PrimExpr, printed: Container[PrimExpr]) -> Iterator[PrimExpr]:
    """The nodes under `root` not yet `printed`, each after its walked operands (left to
    right), `root` last. `printed` is read as the caller fills it in."""
    return pending_post_order(root, walked_operands, printed.__contains__)
