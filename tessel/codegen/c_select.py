"""Vector min/max and select in C as a compare and a bitwise blend under a whole-lane mask,
which gcc compiles to a vector compare and blend (as lane loops they were the slowest part of
conv epilogues and of every zero-padding copy).

Float min/max keep NumPy's semantics, as the scalar helpers do: a NaN in either operand
propagates, and of equal operands the second is the result. Where one side is a number that is
not NaN (clip's bounds, relu's 0, exp's clamp) one compare suffices."""

from __future__ import annotations

from typing import Any

from tessel.codegen.c_types import c_type
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType


class VectorSelect:
    """The ExprPrinter's vector min/max and select; `exp_floors` are the variables it knows to
    be numbers (never NaN)."""

    exp_floors: list[E.Var]

    def expr(self, node: PrimExpr) -> str:  # provided by ExprPrinter
        raise NotImplementedError

    def vector_float_min_max(self, node: E.Min | E.Max) -> str:
        """Float min/max as a compare and blend: five instructions in general, two where one
        side is a number (MobileNetV2's 16 -> 96 1x1 conv with its clip: 0.075 to 0.064 ms)."""
        first, second = node.a, node.b
        wins = "<" if isinstance(node, E.Min) else ">"
        mask = f"(tessel_p0 {wins} tessel_p1) | (tessel_p0 != tessel_p0)"
        constant = _constant_side(node)
        bound = _broadcast_var(node.b)
        if constant is None and any(bound is floor for floor in self.exp_floors):
            constant = 1  # exp's clamp: a number, if not a constant one
        if constant is not None:
            # Only the other side can be NaN, and a NaN fails any compare with the number, so
            # one compare picks the number or the other side; `>=`/`<=` when the number is
            # second keep "of equal operands, the second" (relu(-0.0) is +0.0).
            if constant == 1:
                first, second = node.b, node.a
            mask = f"(tessel_p0 {wins}{'=' if constant == 1 else ''} tessel_p1)"
        return _blend(node.dtype, self.expr(first), self.expr(second), lambda bits: mask)

    def vector_blend(self, node: E.Select) -> str:
        """A select under a vector condition: a bool lane is 0 or 1, negated in the value's
        width it is 0 or all ones. Both values are evaluated, as a lane loop would."""
        condition = self.expr(node.condition)
        return _blend(
            node.dtype,
            self.expr(node.true_value),
            self.expr(node.false_value),
            lambda bits: f"-__builtin_convertvector({condition}, {bits})",
        )


def blendable(dtype: DataType) -> bool:
    """Whether a vector select of `dtype` can be a bitwise blend: numbers of 8 to 64 bits."""
    element = dtype.element
    return not element.is_bool and element.bits in (8, 16, 32, 64)


def _blend(dtype: DataType, first: str, second: str, mask: Any) -> str:
    """`first` where `mask(bits)` (over tessel_p0, tessel_p1) is all ones, else `second`."""
    vector = c_type(dtype)
    bits = c_type(DataType.of(f"int{dtype.element.bits}").with_lanes(dtype.lanes))
    return (
        f"({{ {vector} tessel_p0 = {first}; {vector} tessel_p1 = {second}; "
        f"{bits} tessel_m = {mask(bits)}; "
        f"({vector})(((({bits})tessel_p0) & tessel_m) | ((({bits})tessel_p1) & ~tessel_m)); }})"
    )


def _broadcast_var(operand: PrimExpr) -> E.Var | None:
    """The variable `operand` is or broadcasts, if any."""
    value = operand.value if isinstance(operand, E.Broadcast) else operand
    return value if isinstance(value, E.Var) else None


def _constant_side(node: E.Min | E.Max) -> int | None:
    """1 when `node.b` is a number that is not NaN (a float constant, or a broadcast of one),
    0 when `node.a` is (and `node.b` is not), else None."""
    for side, operand in ((1, node.b), (0, node.a)):
        value = operand.value if isinstance(operand, E.Broadcast) else operand
        if isinstance(value, E.FloatImm) and value.value == value.value:
            return side
    return None
