"""Bitwise operators on integer tensors with NumPy broadcasting (TVM's topi.bitwise_and, ...,
left_shift, right_shift), with every shift amount defined (C leaves many undefined), and
reinterpret (the same bits as another type)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.te.tensor import Tensor
from tessel.tir import builtin
from tessel.topi.broadcast import Operand, _apply
from tessel.topi.math import elementwise
from tessel.topi.utils import expect_tensor, op_error


def _integer_only(op: str, argument: str, dtype: DataType) -> None:
    """Bitwise operators are defined on integers (bools have their logical operators)."""
    if not dtype.is_integer or dtype.is_bool:
        raise op_error(
            op,
            argument,
            f"expected an integer dtype, got {dtype}",
            hint="use the logical operators on bools, and cast floats to an integer dtype",
        )


def _bitwise(op: str, scalar: Callable[[PrimExpr, PrimExpr], PrimExpr], doc: str):
    def apply(lhs: Operand, rhs: Operand) -> Any:
        return _apply(op, {"lhs": lhs, "rhs": rhs}, scalar, _integer_only)

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = doc
    return apply


def _shift_amount(amount: PrimExpr, bits: int, outside: int) -> tuple[PrimExpr, PrimExpr]:
    """The amount clamped into [0, bits) (`outside` where it is not: C's shift is undefined
    there), and whether it was in range."""
    in_range = builders.lt(amount, builders.const(bits, amount.dtype))
    if not amount.dtype.is_uint:
        in_range = builders.logical_and(
            builders.ge(amount, builders.const(0, amount.dtype)), in_range
        )
    clamped = builders.select(in_range, amount, builders.const(outside, amount.dtype))
    return clamped, in_range


def _left_shift(x: PrimExpr, amount: PrimExpr) -> PrimExpr:
    # ONNX BitShift: 0 for an amount < 0 or >= the width. A signed value shifts as its unsigned
    # twin: C leaves shifting a negative value or into the sign bit undefined, and bits past the
    # sign bit are simply discarded.
    bits = x.dtype.bits
    clamped, in_range = _shift_amount(amount, bits, 0)
    unsigned = DataType.of(f"uint{bits}")
    shifted = builtin.bitwise(
        "shift_left", builders.cast(x, unsigned), builders.cast(clamped, unsigned)
    )
    return builders.select(in_range, builders.cast(shifted, x.dtype), builders.const(0, x.dtype))


def _right_shift(x: PrimExpr, amount: PrimExpr) -> PrimExpr:
    # Arithmetic for signed types. Out-of-range amounts give the sign extension alone (-1 for a
    # negative x, else 0), which is exactly a shift by width - 1.
    bits = x.dtype.bits
    clamped, _ = _shift_amount(amount, bits, bits - 1)
    return builtin.bitwise("shift_right", x, clamped)


bitwise_and = _bitwise(
    "bitwise_and",
    lambda a, b: builtin.bitwise("bitwise_and", a, b),
    "lhs & rhs on integers, with broadcasting.",
)
bitwise_or = _bitwise(
    "bitwise_or",
    lambda a, b: builtin.bitwise("bitwise_or", a, b),
    "lhs | rhs on integers, with broadcasting.",
)
bitwise_xor = _bitwise(
    "bitwise_xor",
    lambda a, b: builtin.bitwise("bitwise_xor", a, b),
    "lhs ^ rhs on integers, with broadcasting.",
)
left_shift = _bitwise(
    "left_shift",
    _left_shift,
    "lhs << rhs on integers with broadcasting; 0 where rhs < 0 or rhs >= the width (ONNX's "
    "BitShift), bits past the top discarded.",
)
right_shift = _bitwise(
    "right_shift",
    _right_shift,
    "lhs >> rhs on integers with broadcasting (arithmetic for signed types); where rhs < 0 or "
    "rhs >= the width, the sign extension alone: -1 for negative lhs, else 0 (ONNX's BitShift).",
)


def bitwise_not(data: Operand) -> Any:
    """~data elementwise on an integer tensor."""
    return _apply("bitwise_not", {"data": data}, builtin.bitwise_not, _integer_only)


def reinterpret(x: Any, dtype: str) -> Tensor:
    """The bits of each element of `x` read as `dtype` of the same width (TVM's
    topi.reinterpret). Between integers that is the conversion (two's complement); between a
    float and an integer, a C helper of the prelude (memcpy), which the interpreter lacks."""
    x = expect_tensor("reinterpret", "x", x)
    source, target = DataType.of(x.dtype), DataType.of(dtype)
    if source.bits != target.bits or source.is_bool or target.is_bool:
        raise op_error(
            "reinterpret",
            "dtype",
            f"{x.dtype} and {dtype} differ in width",
            hint="bools and numbers of different widths have no common bits",
        )
    if source == target:
        return elementwise("reinterpret", x, lambda v: v)
    if source.is_integer and target.is_integer:
        return elementwise("reinterpret", x, lambda v: builders.cast(v, target))
    if source.bits not in (32, 64):
        raise op_error(
            "reinterpret",
            "dtype",
            f"reinterpreting {x.dtype} as {dtype} is not supported by the C backend yet",
        )
    helper = f"tessel_bitcast_{source}_{target}"
    return elementwise(
        "reinterpret", x, lambda v: builtin.call_extern(target, helper, v, pure=True)
    )
