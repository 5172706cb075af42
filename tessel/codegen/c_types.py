"""C spellings of data types and constants; constants are printed exactly.

Vector types are GCC/Clang vector extension types named `tessel_<dtype>` (`tessel_float32x8`);
`vector_typedefs` declares the ones a generated file uses. A bool vector (a mask) is a vector
of `int8_t` holding 0 or 1 per lane, so it has a bool's layout in memory.
"""

from __future__ import annotations

import math
import re

import numpy as np

from tessel.codegen.errors import CodegenError
from tessel.support.dtype import DataType

_C_TYPES = {
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "_Float16", "float32": "float", "float64": "double", "bool": "bool",
    "handle": "void*",
    # gcc 12 has no bfloat16 arithmetic type: its bits, converted by prelude helpers (c_expr.py).
    "bfloat16": "uint16_t",
    # ONNX strings: a record of UTF-8 bytes and their count (the string runtime, c_strings.py).
    "string": "tessel_string",
}  # fmt: skip

# Short suffixes for the helper functions of the prelude (tessel_floordiv_i32, ...).
_SUFFIXES = {
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64", "bool": "b",
}  # fmt: skip


def reject_vector(what: str) -> None:
    """Raise the error for vector (or predicated) code, which the C backend cannot emit yet."""
    raise CodegenError(
        f"{what} is not supported by the C backend yet",
        rule="codegen.vector",
        hint="vectors need a power-of-two lane count and a numeric or bool element type",
    )


_VECTOR_NAME = re.compile(r"\btessel_((?:u?int|b?float)(?:8|16|32|64)|bool)x(\d+)\b")


def c_type(dtype: DataType) -> str:
    """The C type of a dtype: a vector of a power-of-two number of lanes is a vector type.
    float16 is GCC's `_Float16` (storage and conversion; the graph level computes in float32);
    bfloat16 is its bits, a `uint16_t` (storage only: c_expr.py converts it through float32)."""
    if dtype.is_vector:
        element = c_type(dtype.element)  # rejects unsupported element types
        if dtype.lanes & (dtype.lanes - 1) or element == "void*":
            reject_vector(f"vector type {dtype} (GCC vectors need a power-of-two lane count)")
        return f"tessel_{dtype}"
    name = str(dtype)
    if name not in _C_TYPES:
        raise CodegenError(
            f"data type {dtype} is not supported by the C backend", rule="codegen.dtype"
        )
    return _C_TYPES[name]


def type_suffix(dtype: DataType) -> str:
    """The suffix naming `dtype`'s variant of a prelude helper."""
    c_type(dtype)  # rejects unsupported types with a clear error
    if dtype.is_bfloat16:
        reject_bfloat16_arithmetic(dtype)
    return _SUFFIXES[str(dtype)]


def reject_bfloat16_arithmetic(dtype: DataType) -> None:
    """Raise the error for arithmetic, a comparison or a math call on bfloat16 values."""
    raise CodegenError(
        f"arithmetic on {dtype} is not supported by the C backend (C has no bfloat16 type; "
        "it only loads, stores, selects and converts bfloat16)",
        rule="codegen.bfloat16",
        hint="cast the operands to float32, compute, and cast the result back to bfloat16",
    )


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
    """A float constant printed exactly (a hex float); inf and nan through math.h macros; a
    bfloat16 constant is its bits, rounded as a cast from float32 rounds."""
    ctype = c_type(dtype)
    if dtype.is_bfloat16:
        with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are values here
            bits = np.array(value, np.float32).astype(dtype.numpy).view(np.uint16)
        return f"((uint16_t)0x{int(bits):04x})"
    if math.isnan(value):
        return f"(({ctype})NAN)"
    if math.isinf(value):
        return f"(({ctype})INFINITY)" if value > 0 else f"(-({ctype})INFINITY)"
    text = value.hex()  # exact; a float32 constant is rounded once, as NumPy rounds it
    if dtype.bits == 16:  # no float16 literal suffix: a double constant converted once
        return f"((_Float16){text})"
    text = f"{text}f" if dtype.bits == 32 else text
    return f"({text})" if value < 0 else text


def vector_typedefs(source: str) -> str:
    """The typedefs of the vector types `source` names, one a line."""
    lines = []
    for element, lanes in sorted(set(_VECTOR_NAME.findall(source))):
        dtype = DataType.of(f"{element}x{lanes}")
        ctype = "int8_t" if dtype.is_bool else c_type(dtype.element)
        size = int(lanes) * (1 if dtype.is_bool else dtype.element.itemsize)
        lines.append(f"typedef {ctype} tessel_{dtype} __attribute__((vector_size({size})));")
    return "".join(line + "\n" for line in lines)
