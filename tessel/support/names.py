"""Names and text from users in generated C: identifiers sanitised, string literals and comments
escaped. Every user-controlled string that reaches C text goes through `c_identifier`,
`c_string_literal` or `c_comment`."""

from __future__ import annotations

import re
from typing import TypeGuard

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic
    _Generic _Noreturn _Static_assert _Thread_local bool true false NULL main""".split()
)
_INVALID = re.compile(r"[^A-Za-z0-9_]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_c_identifier(name: object) -> TypeGuard[str]:
    """True if `name` is a string spelling an ASCII C identifier that is not a keyword (the
    names `T.call_extern` may call)."""
    return isinstance(name, str) and bool(_IDENTIFIER.fullmatch(name)) and name not in C_KEYWORDS


def c_identifier(name: str) -> str:
    """A valid, non-reserved C identifier derived from `name` (not yet unique)."""
    text = _INVALID.sub("_", name) or "_"
    if text[0].isdigit():
        text = "_" + text
    # `__x` and `_X` are reserved to the C implementation (predefined macros such as `_LP64`).
    reserved = text.startswith("__") or (text[0] == "_" and text[1:2].isupper())
    if text in C_KEYWORDS or reserved or text.startswith("tessel_"):
        text = "v_" + text
    return text


def unique_name(base: str, taken: set[str]) -> str:
    """`base` or `base_1`, `base_2`, ...: the first not in `taken`, which it is added to."""
    name, counter = base, 0
    while name in taken:
        counter += 1
        name = f"{base}_{counter}"
    taken.add(name)
    return name


def c_string_literal(text: str) -> str:
    """A C string literal whose bytes are exactly the UTF-8 bytes of `text`.

    Printable ASCII stays as it is, except `"` and `\\` (escaped) and `?` (escaped, so no
    `??/`-style trigraph forms under -std=c11); every other byte (newlines, NUL, non-ASCII) is a
    three-digit octal escape, which, unlike a hex escape, never swallows the digit after it."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        char = chr(byte)
        if char in '"\\?':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


_COMMENT_BREAKERS = (("*/", "* /"), ("/*", "/ *"), ("??", "? ?"))


def c_comment(text: str) -> str:
    """`text` made safe inside a one-line C comment (`// ...` or `/* ... */`): no newline, no
    `*/` or `/*`, no trigraph, no backslash at the end (which would continue a `//` comment:
    it is written `\\x5c`); bytes outside printable ASCII as `\\xNN`."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        out.append(chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}")
    safe = "".join(out)
    for bad, good in _COMMENT_BREAKERS:
        while bad in safe:  # overlapping pairs (`*/*/`, `???`) need a second round
            safe = safe.replace(bad, good)
    safe = safe.rstrip(" ")  # GCC splices a backslash followed by spaces and a newline too
    return safe[:-1] + "\\x5c" if safe.endswith("\\") else safe
