"""Reduction combiners and their identities: when is an update a no-op? (docs/architecture.md §5)

Padding a buffer that a reduction reads along its reduction axis is legal exactly when the
padded elements leave the accumulator unchanged. That is decided for any update, not only the
recognised combiners: the padded loads are replaced by the pad value, the update is simplified by
the identity and absorbing laws below, and it must come back as the accumulator itself. The
combiner is recognised only to say, in an error, which identity was needed.

The laws hold for integers exactly and for floats assuming finite values (`0 * x = 0` is false
for inf and NaN): the assumption every padding scheme makes, as TVM's does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import same_expr
from tessel.support.dtype import DataType
from tessel.tir import builtin


@dataclass(frozen=True)
class Combiner:
    """A recognised reduction combiner: its name as users write it and its identity."""

    name: str
    identity: Callable[[DataType], int | float]


def _lowest(dtype: DataType) -> int | float:
    return float("-inf") if dtype.is_float else dtype.min_value()


def _highest(dtype: DataType) -> int | float:
    return float("inf") if dtype.is_float else dtype.max_value()


_BINARY_COMBINERS: dict[type, Combiner] = {
    E.Add: Combiner("+", lambda dtype: 0),
    E.Mul: Combiner("*", lambda dtype: 1),
    E.Max: Combiner("max", _lowest),
    E.Min: Combiner("min", _highest),
}
_CALL_COMBINERS: dict[str, Combiner] = {
    "bitwise_and": Combiner(
        "bitwise_and", lambda dtype: dtype.max_value() if dtype.is_uint else -1
    ),
    "bitwise_or": Combiner("bitwise_or", lambda dtype: 0),
    "bitwise_xor": Combiner("bitwise_xor", lambda dtype: 0),
}


def combiner_of(update: E.PrimExpr, accumulator: E.PrimExpr) -> Combiner | None:
    """The combiner of `update` when it is `acc <op> term` (or `term <op> acc`), else None."""
    if (
        isinstance(update, E.BinaryOp)
        and type(update) in _BINARY_COMBINERS
        and (same_expr(update.a, accumulator) or same_expr(update.b, accumulator))
    ):
        return _BINARY_COMBINERS[type(update)]
    if isinstance(update, E.Call) and len(update.args) == 2:
        name = update.op.name.removeprefix("tir.") if isinstance(update.op, E.Op) else ""
        if name in _CALL_COMBINERS and any(same_expr(a, accumulator) for a in update.args):
            return _CALL_COMBINERS[name]
    return None


def leaves_unchanged(update: E.PrimExpr, accumulator: E.PrimExpr, analyzer: Analyzer) -> bool:
    """True iff `update` simplifies to `accumulator` by the identity and absorbing laws."""
    return same_expr(simplify_identities(update, analyzer), analyzer.simplify(accumulator))


def simplify_identities(expr: E.PrimExpr, analyzer: Analyzer) -> E.PrimExpr:
    """`expr` with identity and absorbing elements folded away, for every dtype (finite floats)."""
    # folding an expression gives an expression
    return analyzer.simplify(_IdentityFolder(analyzer).visit(expr))  # type: ignore[arg-type]


def _is_value(expr: E.PrimExpr, value: float) -> bool:
    return isinstance(expr, E.IntImm | E.FloatImm) and expr.value == value


class _IdentityFolder(Mutator):
    """Post-order folding of `x + 0`, `x * 1`, `x * 0`, `max(x, lowest)`, `x & -1`, ... ."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.analyzer = analyzer

    def visit(self, node: Node) -> Node:
        new = super().visit(node)
        return _fold(new) if isinstance(new, E.PrimExpr) else new

    def visit_Call(self, call: E.Call) -> Node:
        if call.op is builtin.if_then_else_op:
            return _if_then_else(self, call)
        return self.generic_visit(call)


def _if_then_else(folder: _IdentityFolder, call: E.Call) -> E.PrimExpr:
    # folding an expression gives an expression
    condition = folder.analyzer.simplify(folder.visit(call.args[0]))  # type: ignore[arg-type]
    if isinstance(condition, E.IntImm):
        # folding an expression gives an expression
        return folder.visit(call.args[1] if condition.value else call.args[2])  # type: ignore[return-value]
    return with_changes(
        call, args=(condition, folder.visit(call.args[1]), folder.visit(call.args[2]))
    )


def _fold(expr: E.PrimExpr) -> E.PrimExpr:
    """One folding step at the root of `expr` (its operands are already folded)."""
    if isinstance(expr, E.Add):
        return _drop_operand(expr, lambda x: _is_value(x, 0))
    if isinstance(expr, E.Sub) and _is_value(expr.b, 0):
        return expr.a
    if isinstance(expr, E.Mul):
        zero = _is_value(expr.a, 0) or _is_value(expr.b, 0)
        return (
            builders.const(0, expr.dtype)
            if zero
            else _drop_operand(expr, lambda x: _is_value(x, 1))
        )
    if isinstance(expr, E.Max):
        return _drop_operand(expr, lambda x: _is_value(x, _lowest(x.dtype)))
    if isinstance(expr, E.Min):
        return _drop_operand(expr, lambda x: _is_value(x, _highest(x.dtype)))
    if isinstance(expr, E.Call) and isinstance(expr.op, E.Op) and len(expr.args) == 2:
        return _fold_bitwise(expr)
    return expr


def _drop_operand(expr: E.BinaryOp, is_identity: Callable[[E.PrimExpr], bool]) -> E.PrimExpr:
    if is_identity(expr.b):
        return expr.a
    if is_identity(expr.a):
        return expr.b
    return expr


def _fold_bitwise(call: E.Call) -> E.PrimExpr:
    name = call.op.name.removeprefix("tir.")  # type: ignore[union-attr]  # an Op
    combiner = _CALL_COMBINERS.get(name)
    if combiner is None:
        return call
    a, b = call.args
    unit = combiner.identity(call.dtype)
    if _is_value(b, unit):
        return a
    if _is_value(a, unit):
        return b
    return call
