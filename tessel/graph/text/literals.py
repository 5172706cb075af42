"""Literals of the graph text format, printed and read back exactly.

Scalars follow Relay: `3` is int32 (int64 when it does not fit), `2i64`, `1f` is float32,
`0.5f16`, `1f64`, `True`; `0.5bf16` is bfloat16 (a suffix of our own: TVM's text has none).
Floats print as the shortest text that reads back to the same value of their dtype. Attribute
values are Python ints, floats (`1e-05f`), bools, strings, None and
(nested) lists, which come back as tuples.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from tessel.arith.dims import SymbolNames, dim_text
from tessel.graph.expr import Constant
from tessel.ir.expr import PrimExpr

_FLOAT_SUFFIX = {"float32": "f", "float16": "f16", "float64": "f64", "bfloat16": "bf16"}
_INT_SUFFIX = {
    "int32": "", "int64": "i64", "int16": "i16", "int8": "i8",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}  # fmt: skip
_SUFFIX_DTYPE = {
    "f": "float32", "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "i": "int32", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u": "uint32", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}  # fmt: skip
_SPLIT = re.compile(r"(-?(?:inf|nan|[0-9.eE+-]+?))((?:bf16|[fiu](?:8|16|32|64)?)?)$")


class LiteralError(ValueError):
    """A number that is not a valid literal; the parser reports it at the token."""


def float_text(value: float | np.floating) -> str:
    """The shortest text reading back to `value` in its own precision, without a `.0` tail."""
    if isinstance(value, np.generic) and not isinstance(value, np.floating):
        text = _shortest_bfloat16(value)  # ml_dtypes' bfloat16 prints 6 digits, not the fewest
    else:
        text = str(value) if isinstance(value, np.floating) else repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _shortest_bfloat16(value: np.generic) -> str:
    """The fewest significant digits that read back as the bfloat16 `value` (at most 9: the
    exact float32 value always reads back)."""
    number = float(value)
    if not math.isfinite(number):
        return repr(number)
    for digits in range(1, 9):
        text = f"{number:.{digits}g}"
        if type(value)(float(text)) == value:
            return text
    return repr(number)


def constant_literal(constant: Constant) -> str | None:
    """`constant` as an inline scalar literal, or None when it must go to the metadata table."""
    data = constant.data
    if data.ndim != 0:
        return None
    dtype = str(data.dtype)
    if dtype == "bool":
        return "True" if bool(data) else "False"
    if dtype in _FLOAT_SUFFIX:
        return float_text(data[()]) + _FLOAT_SUFFIX[dtype]
    if dtype in _INT_SUFFIX:
        return f"{int(data)}{_INT_SUFFIX[dtype]}"
    return None


def split_number(text: str) -> tuple[str, str]:
    """(digits, suffix) of a number token: `1e-05f` -> (`1e-05`, `f`)."""
    match = _SPLIT.match(text)
    if match is None:
        raise LiteralError(f"`{text}` is not a number")
    return match.group(1), match.group(2)


def number_constant(text: str) -> Constant:
    """The scalar Constant a number token denotes (Relay's typing of unsuffixed numbers)."""
    digits, suffix = split_number(text)
    is_float = suffix.startswith(("f", "bf")) or (not suffix and _looks_float(digits))
    if is_float:
        dtype = _SUFFIX_DTYPE.get(suffix, "float32")
        return Constant(np.array(_float_value(digits, dtype), dtype=dtype))
    if _looks_float(digits):
        raise LiteralError(f"the integer literal `{text}` has a fraction or an exponent")
    value = int(digits)
    dtype = _SUFFIX_DTYPE[suffix] if suffix else ("int32" if -(2**31) <= value < 2**31 else "int64")
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise LiteralError(f"`{text}` does not fit in {dtype} (range {info.min} to {info.max})")
    return Constant(np.array(value, dtype=dtype))


def number_attr(text: str) -> int | float:
    """An attribute value from a number token: an int, or a float for a float literal."""
    digits, suffix = split_number(text)
    if suffix.startswith(("f", "bf")) or (not suffix and _looks_float(digits)):
        return float(digits)
    if _looks_float(digits):
        raise LiteralError(f"the integer literal `{text}` has a fraction or an exponent")
    return int(digits)


def _looks_float(digits: str) -> bool:
    return any(c in digits for c in ".eEn") or digits.lstrip("-") == "inf"


def _float_value(digits: str, dtype: str) -> np.floating:
    with np.errstate(over="ignore"):
        value = np.dtype(dtype).type(digits)
    if math.isinf(value) and "inf" not in digits:
        raise LiteralError(f"`{digits}` is out of range for {dtype}")
    return value


def attr_text(value: Any, names: SymbolNames | None = None) -> str:
    """An attribute value as text; TypeError for values the text format cannot hold. A
    symbolic size prints as its dimension text (`seq`), its symbols named by `names`."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value) + "f"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(attr_text(v, names) for v in value) + "]"
    if isinstance(value, PrimExpr):
        return dim_text(value, names)
    raise TypeError(
        f"the attribute value {value!r} ({type(value).__name__}) has no text form; "
        "use an int, float, bool, str, None or a list of those"
    )
