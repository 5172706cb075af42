"""Identifier sanitising: names from users never reach generated C unchanged unless valid."""

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
