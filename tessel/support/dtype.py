"""Scalar and vector data types, spelled as in TVM ("float32", "int8x4", "bool", "handle").

"string" is ONNX's string element (TVM has none): in memory a record of a UTF-8 byte pointer
and a length (`tessel_string` in C, STRING_RECORD in NumPy); at the Python API an object array
of `str` (tessel/runtime/strings.py converts).

bfloat16 (TVM's type code "bfloat") is a float type; NumPy has none, so its NumPy dtype is
ml_dtypes' (importing ml_dtypes also lets `np.dtype("bfloat16")` name it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

from tessel.support.errors import UserError

_CODES = ("int", "uint", "float", "bfloat", "bool", "handle", "string")
_PATTERN = re.compile(r"^(int|uint|float|bfloat|bool|handle|string)(\d*)(?:x(\d+))?$")
_UNSIZED = {"bool": 1, "handle": 64, "string": 128}  # spelled without a bit width
# One string element in memory: the address of its UTF-8 bytes and their count.
STRING_RECORD = np.dtype([("data", "<u8"), ("size", "<i8")])
_VALID_BITS = {
    "int": (8, 16, 32, 64), "uint": (8, 16, 32, 64), "float": (16, 32, 64), "bfloat": (16,),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DataType:
    """A type code, a bit width and a lane count (lanes > 1 is a vector)."""

    code: str
    bits: int
    lanes: int = 1

    def __post_init__(self) -> None:
        if self.code not in _CODES:
            raise UserError(
                f"unknown type code {self.code!r}; expected one of {_CODES}", rule="dtype.unknown"
            )
        if self.code in _VALID_BITS and self.bits not in _VALID_BITS[self.code]:
            raise UserError(f"{self.code} has no {self.bits}-bit variant", rule="dtype.bits")
        if self.code == "string" and self.lanes != 1:
            raise UserError("strings have no vectors", rule="dtype.lanes")
        if self.lanes < 1:
            raise UserError(
                f"a data type needs at least one lane, got {self.lanes}", rule="dtype.lanes"
            )

    @staticmethod
    def of(value: DataType | str | np.dtype | type) -> DataType:
        """Parse a dtype given as a DataType, a string, or a NumPy dtype."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            return _parse(value)
        dtype = np.dtype(value)
        if dtype.kind in "OUS" or (dtype.kind == "V" and dtype == STRING_RECORD):
            return string  # Python strings, as ONNX gives them, or their records
        return _parse(str(dtype))

    def __str__(self) -> str:
        base = self.code if self.code in _UNSIZED else f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"

    @property
    def element(self) -> DataType:
        """The scalar type of one lane."""
        return self if self.lanes == 1 else DataType(self.code, self.bits)

    def with_lanes(self, lanes: int) -> DataType:
        """This type with `lanes` lanes."""
        return DataType(self.code, self.bits, lanes)

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """IEEE float16/32/64 or bfloat16."""
        return self.code in ("float", "bfloat")

    @property
    def is_bfloat16(self) -> bool:
        """bfloat16 (of any lane count): float32's upper half, with no C arithmetic type."""
        return self.code == "bfloat"

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def is_handle(self) -> bool:
        return self.code == "handle"

    @property
    def is_string(self) -> bool:
        """ONNX's string element: moved and compared, never computed on."""
        return self.code == "string"

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def itemsize(self) -> int:
        """Bytes of one lane (bool takes a byte)."""
        return 1 if self.is_bool else self.bits // 8

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of one lane."""
        if self.is_handle:
            raise UserError("a handle has no NumPy dtype")
        return _numpy_of(self.code, self.bits)

    @property
    def value_numpy(self) -> np.dtype:
        """The NumPy dtype of a value of this type in Python (the evaluator's, a constant's,
        an argument's): object for strings (arrays of `str`), else `numpy`."""
        return np.dtype(object) if self.is_string else self.numpy

    def min_value(self) -> int | float:
        """The smallest representable value of one lane."""
        _numeric(self)
        return _range_of(self.code, self.bits)[0]

    def max_value(self) -> int | float:
        """The largest representable value of one lane."""
        _numeric(self)
        return _range_of(self.code, self.bits)[1]


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


# Both are asked for on every constant the simplifier builds: answered once per type.
@lru_cache(maxsize=64)
def _numpy_of(code: str, bits: int) -> np.dtype:
    if code == "bfloat":
        return _BFLOAT16
    if code == "string":
        return STRING_RECORD
    return np.dtype("bool" if code == "bool" else f"{code}{bits}")


@lru_cache(maxsize=64)
def _range_of(code: str, bits: int) -> tuple[int | float, int | float]:
    if code == "bool":
        return 0, 1
    dtype = _numpy_of(code, bits)
    if code in ("float", "bfloat"):
        info = ml_dtypes.finfo(dtype)  # NumPy's finfo lacks bfloat16
        return float(info.min), float(info.max)
    limits = np.iinfo(dtype)
    return int(limits.min), int(limits.max)


def text_of(item: object) -> str:
    """A string element as `str`: `str` as it is, `bytes` read as UTF-8 (bytes that are not
    UTF-8 kept as surrogate escapes, so that encoding gives them back); TypeError otherwise."""
    if isinstance(item, str):
        return str(item)
    if isinstance(item, bytes | np.bytes_):
        return bytes(item).decode("utf-8", "surrogateescape")
    raise TypeError(f"a {type(item).__name__} is not a string")


def _numeric(dtype: DataType) -> None:
    if dtype.is_string or dtype.is_handle:
        raise UserError(f"{dtype} has no numeric range", rule="dtype.not-numeric")


@lru_cache(maxsize=256)
def _parse(text: str) -> DataType:
    match = _PATTERN.match(text)
    if match is None:
        raise UserError(
            f"unknown data type {text!r}",
            rule="dtype.unknown",
            hint="use e.g. 'float32', 'int64', 'uint8', 'bool', 'string' or 'float32x4'",
        )
    code, bits, lanes = match.groups()
    default_bits = _UNSIZED.get(code)
    if code in _UNSIZED and bits:
        raise UserError(f"unknown data type {text!r}", rule="dtype.unknown")
    if code == "string" and lanes:
        raise UserError(f"strings have no vectors: {text!r}", rule="dtype.unknown")
    if code not in _UNSIZED and not bits:
        raise UserError(
            f"data type {text!r} needs a bit width, e.g. {code}32", rule="dtype.unknown"
        )
    return DataType(code, int(bits) if bits else default_bits, int(lanes) if lanes else 1)


int8, int16, int32, int64 = (DataType("int", b) for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DataType("uint", b) for b in (8, 16, 32, 64))
float16, float32, float64 = (DataType("float", b) for b in (16, 32, 64))
bfloat16 = DataType("bfloat", 16)
bool_ = DataType("bool", 1)
handle = DataType("handle", 64)
string = DataType("string", 128)
