"""String tensors between Python and the generated C (tessel/codegen/c_strings.py): arrays of
Python `str` (or `bytes`) become arrays of records (address of UTF-8 bytes, byte count) over one
buffer that must outlive the call, and records the C made become `str` again.

The C runtime keeps the strings a call makes in the calling thread's heap until that thread's
next call, so results are read back right after the call that made them.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from tessel.support.dtype import STRING_RECORD, text_of
from tessel.support.errors import UserError

_ALIGNMENT = 64


class StringTensorError(UserError, ValueError):
    """A value given for a string tensor that is not an array of strings."""


def is_string_array(value: Any) -> bool:
    """Whether `value` is a NumPy array a string tensor takes (str/bytes elements)."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "OUS"


def to_records(value: np.ndarray, name: str = "input") -> np.ndarray:
    """The records of an array of strings, each string's bytes UTF-8 and followed by a NUL.
    The records and the bytes share one buffer, which the records' `.base` keeps alive, and
    start 64-byte aligned, as the arena's tensors do."""
    encoded = []
    for k, item in enumerate(value.reshape(-1)):
        try:  # bytes come back as they were (surrogate escapes both ways)
            encoded.append(text_of(item).encode("utf-8", "surrogateescape"))
        except TypeError:
            raise StringTensorError(
                f"{name}: element {k} is a {type(item).__name__}, not a string",
                rule="strings.element",
            ) from None
    head = len(encoded) * STRING_RECORD.itemsize
    joined = b"\0".join(encoded) + b"\0"
    raw = np.zeros(_ALIGNMENT + head + len(joined), np.uint8)
    start = -raw.ctypes.data % _ALIGNMENT
    buffer = raw[start : start + head + len(joined)]
    buffer[head:] = np.frombuffer(joined, np.uint8)
    sizes = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded), dtype=np.uint64)
    if len(encoded) > 1:
        offsets[1:] = np.cumsum(sizes[:-1] + 1)
    records = buffer[:head].view(STRING_RECORD)
    records["data"] = np.uint64(buffer.ctypes.data + head) + offsets
    records["size"] = sizes
    return records.reshape(value.shape)


def from_records(records: np.ndarray) -> np.ndarray:
    """The strings the records point at, as an object array of `str` (bytes that are not UTF-8
    kept as surrogate escapes, so that encoding gives them back)."""
    out = np.empty(records.shape, dtype=object)
    flat = out.reshape(-1)
    for k, record in enumerate(records.reshape(-1)):
        size = int(record["size"])
        data = ctypes.string_at(int(record["data"]), size) if size else b""
        flat[k] = data.decode("utf-8", "surrogateescape")
    return out


def read_strings(value: Any) -> Any:
    """`value` (an array or nested tuples of them) with its string records read into `str`s."""
    if isinstance(value, tuple):
        return tuple(read_strings(v) for v in value)
    return from_records(value) if value.dtype == STRING_RECORD else value


__all__ = ["StringTensorError", "from_records", "is_string_array", "read_strings", "to_records"]
