"""Module constants linked into the library as one binary blob (link_params,
docs/architecture.md §8).

The constants' bytes go into a binary file that the C source includes with the assembler's
`.incbin`, from a top-level `asm` block, so weights never pass through the C parser as text: a
model with megabytes of weights compiles as fast as one without. Each constant starts at a
64-byte boundary of the blob and gets a hidden symbol (`extern const unsigned char
tessel_constant_<k>[]`, aligned to 64) that the functions read through a typed pointer.

The blob is named after the sha256 of its bytes, so the C text identifies its data; the compiler
driver writes it next to the C file it compiles and hashes it into the cache key
(tessel.runtime.compiler). `.incbin`, `.pushsection` and hidden ELF symbols need a GNU-style
assembler on an ELF platform (gcc or clang on Linux, the targets Tessel builds for); elsewhere the C
text stops at an `#error` rather than miscompiling.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from tessel.support.abi import DataFile

ALIGNMENT = 64  # bytes: a cache line, and the widest vector load the backend emits


def linked_constants(symbols: Sequence[str], arrays: Sequence[np.ndarray]) -> tuple[str, DataFile]:
    """The C text declaring and defining `symbols` (one per array) by `.incbin` of the blob, and
    the blob: the arrays' native bytes, each at a multiple of ALIGNMENT."""
    blob, offsets = _blob_bytes(arrays)
    blob_file = DataFile(f"tessel-constants-{hashlib.sha256(blob).hexdigest()[:32]}.bin", blob)
    declarations = [
        f"extern const unsigned char {symbol}[] "
        f'__attribute__((visibility("hidden"), aligned({ALIGNMENT})));'
        for symbol in symbols
    ]
    directives = [".pushsection .rodata"]
    for symbol, offset, array in zip(symbols, offsets, arrays, strict=True):
        directives.extend(_symbol_directives(symbol, blob_file.name, offset, int(array.nbytes)))
    directives.append(".popsection")
    asm = "\n".join(f'  "{line}\\n"' for line in directives)
    text = "\n".join([_PLATFORM_CHECK, *declarations, f"__asm__(\n{asm}\n);", ""])
    return text, blob_file


def _blob_bytes(arrays: Sequence[np.ndarray]) -> tuple[bytes, list[int]]:
    """The arrays' bytes concatenated, each padded with zeros to a multiple of ALIGNMENT."""
    parts, offsets, offset = [], [], 0
    for array in arrays:
        data = np.ascontiguousarray(array).tobytes()
        offsets.append(offset)
        padding = -len(data) % ALIGNMENT
        parts.extend((data, bytes(padding)))
        offset += len(data) + padding
    return b"".join(parts), offsets


def _symbol_directives(symbol: str, file_name: str, offset: int, nbytes: int) -> list[str]:
    """One constant: an aligned, hidden, sized object whose bytes come from the blob."""
    lines = [
        f".balign {ALIGNMENT}",
        f".globl {symbol}",
        f".hidden {symbol}",
        f".type {symbol}, @object",
        f"{symbol}:",
    ]
    if nbytes > 0:  # an empty constant is a label alone
        lines.append(f'.incbin \\"{file_name}\\", {offset}, {nbytes}')
    lines.append(f".size {symbol}, {nbytes}")
    return lines


_PLATFORM_CHECK = """\
#if !defined(__ELF__)
#error "linked constants (link_params) need an ELF target: the blob is included with .incbin"
#endif"""


__all__ = ["ALIGNMENT", "linked_constants"]
