"""C spellings of data types and constants; constants are printed exactly."""

from __future__ import annotations

import math

from tessel.codegen.errors import CodegenError
from tessel.support.dtype import DataType

_C_TYPES = {
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double", "bool": "bool", "handle": "void*",
}  # fmt: skip

# Short suffixes for the helper functions of the prelude (tessel_floordiv_i32, ...).
_SUFFIXES = {
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float32": "f32", "float64": "f64", "bool": "b",
}  # fmt: skip


def reject_vector(what: str) -> None:
    """Raise the error for vector (or predicated) code, which the C backend cannot emit yet."""
    raise CodegenError(
        f"{what} is not supported by the C backend yet",
        rule="codegen.vector",
        hint="T.vectorized loops are emitted as scalar loops; avoid explicit Ramp/Broadcast",
    )


def c_type(dtype: DataType) -> str:
    """The C type of a scalar dtype; vector and 16-bit float types are not supported yet."""
    if dtype.is_vector:
        reject_vector(f"vector type {dtype}")
    name = str(dtype)
    if name not in _C_TYPES:
        raise CodegenError(
            f"data type {dtype} is not supported by the C backend", rule="codegen.dtype"
        )
    return _C_TYPES[name]


def type_suffix(dtype: DataType) -> str:
    """The suffix naming `dtype`'s variant of a prelude helper."""
    c_type(dtype)  # rejects unsupported types with a clear error
    return _SUFFIXES[str(dtype)]


def int_literal(value: int, dtype: DataType) -> str:
    """An integer or bool constant of exactly `dtype` (no reliance on C's literal typing)."""
    if dtype.is_bool:
        return "true" if value else "false"
    ctype = c_type(dtype)
    if dtype.is_uint:
        return f"(({ctype}){value}ULL)"
    if value == dtype.min_value():
        # -2^(bits-1) has no literal: its magnitude overflows the signed type.
        return f"(({ctype})({value + 1}LL - 1))"
    if dtype.bits == 32:
        return str(value) if value >= 0 else f"({value})"  # a C int literal is an int32_t
    return f"(({ctype}){value}LL)" if dtype.bits == 64 else f"(({ctype}){value})"


def float_literal(value: float, dtype: DataType) -> str:
    """A float constant printed exactly (a hex float); inf and nan through math.h macros."""
    ctype = c_type(dtype)
    if math.isnan(value):
        return f"(({ctype})NAN)"
    if math.isinf(value):
        return f"(({ctype})INFINITY)" if value > 0 else f"(-({ctype})INFINITY)"
    text = value.hex()  # exact; a float32 constant is rounded once, as NumPy rounds it
    text = f"{text}f" if dtype.bits == 32 else text
    return f"({text})" if value < 0 else text
