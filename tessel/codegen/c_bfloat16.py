"""C text of bfloat16 conversions: bfloat16 is held as its bits (a `uint16_t`, c_types.py) and
converts only to and from float32, with the prelude's helpers for a scalar (c_prelude.py) and
their lane-wise integer form for a vector, so a vectorized loop converts without a lane loop.
Any other conversion goes through float32 (c_expr.py splits it), as the interpreter's does.
"""

from __future__ import annotations

from tessel.codegen.c_types import c_type
from tessel.support.dtype import DataType

# Calls that only move bfloat16 bits; any other call on bfloat16 would compute on them.
MOVING_CALLS = frozenset(
    {
        "if_then_else",
        "address_of",
        "tvm_access_ptr",
        "call_extern",
        "call_pure_extern",
        "likely",
        "undef",
        "ret",
        "reinterpret",
    }
)


def through_float32(src: DataType, dst: DataType) -> bool:
    """True for a conversion between bfloat16 and a type other than itself and float32."""
    src, dst = src.element, dst.element
    if src == dst or not (src.is_bfloat16 or dst.is_bfloat16):
        return False
    return DataType("float", 32) not in (src, dst)


def conversion(src: DataType, dst: DataType, value: str) -> str:
    """C converting `value` (C of `src`) to `dst`, one of them bfloat16 and the other float32
    (of the same lanes): RNE with NaN kept quiet narrowing, the bits shifted up widening."""
    if not dst.is_vector:
        helper = "tessel_bf16_to_f32" if src.is_bfloat16 else "tessel_f32_to_bf16"
        return f"{helper}({value})"
    words = c_type(DataType("uint", 32, dst.lanes))
    if src.is_bfloat16:  # the bits in the upper half of a 32-bit word, read as float
        return f"(({c_type(dst)})(__builtin_convertvector({value}, {words}) << 16))"
    # tessel_f32_to_bf16 on every lane, branch-free: a vector compare gives 0/-1 lanes.
    return (
        f"({{ {words} tessel_bu = ({words})({value}); "
        f"{words} tessel_bn = ({words})((tessel_bu & 0x7fffffffu) > 0x7f800000u); "
        f"{words} tessel_bq = ((tessel_bu >> 16) & 0x8000u) | 0x7fc0u; "
        f"{words} tessel_br = (tessel_bu + 0x7fffu + ((tessel_bu >> 16) & 1u)) >> 16; "
        f"__builtin_convertvector((tessel_br & ~tessel_bn) | (tessel_bq & tessel_bn), "
        f"{c_type(dst)}); }})"
    )
