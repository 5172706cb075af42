"""Unique, valid Python names for variables and buffers, which are compared by identity.

Two distinct objects sharing a name hint print as `i`, `i_1`, ... A name defined in a scope
(a loop body, a block) is released when the scope ends, so sibling loops both print `i`, as
TVM's printer does; the parser scopes names the same way.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tessel.support.names import unique_name

# Names the printed script itself needs: a variable called `T` or `range` would shadow them.
RESERVED = frozenset({"T", "I", "range", "True", "False", "None"})
_INVALID = re.compile(r"[^0-9A-Za-z_]")


def sanitize(hint: str) -> str:
    """A valid, non-reserved Python identifier derived from `hint` (deterministic)."""
    text = _INVALID.sub("_", hint) or "v"
    if text[0].isdigit():
        text = "v" + text
    if keyword.iskeyword(text) or keyword.issoftkeyword(text) or text in RESERVED:
        text += "_"
    return text


class NameTable:
    """Maps printed objects (by identity) to unique names, with scopes that release names."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._objects: dict[int, Any] = {}  # keeps each named object alive so ids stay unique
        self._taken: set[str] = set()
        self._scopes: list[list[tuple[int, str]]] = []
        self._aliases: dict[int, str] = {}

    def define(self, obj: Any, hint: str) -> str:
        """Give `obj` a fresh unique name based on `hint`, owned by the innermost scope."""
        name = unique_name(sanitize(hint), self._taken)
        self._names[id(obj)] = name
        self._objects[id(obj)] = obj
        if self._scopes:
            self._scopes[-1].append((id(obj), name))
        return name

    def alias(self, obj: Any, text: str) -> None:
        """Print `obj` as `text` (e.g. a buffer's data variable as `A.data`); takes no name."""
        self._aliases[id(obj)] = text
        self._objects[id(obj)] = obj

    def is_defined(self, obj: Any) -> bool:
        """True if `obj` has a name or an alias."""
        return id(obj) in self._names or id(obj) in self._aliases

    def name_of(self, obj: Any, hint: str) -> str:
        """The name of `obj`; an object never defined gets a permanent name on first use."""
        key = id(obj)
        if key in self._aliases:
            return self._aliases[key]
        if key not in self._names:
            self._names[key] = unique_name(sanitize(hint), self._taken)
            self._objects[key] = obj
        return self._names[key]

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Names defined inside are released (for reuse by siblings) when the block ends."""
        self._scopes.append([])
        try:
            yield
        finally:
            # One object may be defined twice (two parameters over one buffer): release each
            # name given, and forget the object once, without failing on the second.
            for key, name in self._scopes.pop():
                self._taken.discard(name)
                if self._names.get(key) == name:
                    del self._names[key]
                    self._objects.pop(key, None)
