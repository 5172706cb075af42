"""Attributes in graph text: `name=value` after the arguments of a call or the parameters of a
function; values are numbers (`4`, `1e-05f`), strings, True/False, None, lists `[1, 1]` and
metadata references (`meta[VirtualDevice][0]`, read by the parser's `meta` hook)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tessel.graph.text.cursor import Cursor, describe
from tessel.graph.text.literals import LiteralError, number_attr

_VALUES = "a number, a string, True, False, None or a list `[...]`"


def at_attribute(cur: Cursor) -> bool:
    """The cursor is at `name=`: an attribute, not an argument."""
    return cur.at("IDENT") and cur.at("=", ahead=1)


MetaHook = Callable[[], Any]  # reads `meta[kind][i]` at the cursor, returns the entry


def parse_attribute(cur: Cursor, attrs: dict[str, Any], meta: MetaHook | None = None) -> None:
    """One `name=value`, added to `attrs` (a name given twice is an error)."""
    key = cur.next()
    cur.next()  # `=`
    if key.text in attrs:
        raise cur.error(key, f"the attribute `{key.text}` is given twice")
    attrs[key.text] = parse_attr_value(cur, meta)


def parse_attr_value(cur: Cursor, meta: MetaHook | None = None) -> Any:
    """One attribute value at the cursor."""
    token = cur.peek()
    if meta is not None and token.kind == "IDENT" and token.text == "meta":
        return meta()
    if token.kind == "NUMBER":
        cur.next()
        try:
            return number_attr(token.text)
        except LiteralError as err:
            raise cur.error(token, str(err)) from err
    if token.kind == "STRING":
        cur.next()
        return parse_string(cur, token)
    if token.kind == "IDENT" and token.text in ("True", "False", "None"):
        cur.next()
        return {"True": True, "False": False, "None": None}[token.text]
    if token.kind == "[":
        return _list(cur, meta)
    hint = f'strings are quoted: "{token.text}"' if token.kind == "IDENT" else None
    raise cur.error(
        token, f"expected an attribute value ({_VALUES}), found {describe(token)}", hint
    )


def _list(cur: Cursor, meta: MetaHook | None) -> tuple[Any, ...]:
    cur.next()
    items: list[Any] = []
    while not cur.accept("]"):
        if items:
            cur.expect(",", "`,` or `]` in the list")
            if cur.accept("]"):
                break
        items.append(_symbolic_size(cur) if _at_symbol(cur) else parse_attr_value(cur, meta))
    return tuple(items)


def _at_symbol(cur: Cursor) -> bool:
    """A list item that is a symbolic size (`[0, seq, 12]`): a name other than a keyword."""
    token = cur.peek()
    return token.kind == "IDENT" and token.text not in ("True", "False", "None", "meta")


def _symbolic_size(cur: Cursor) -> Any:
    from tessel.graph.text.parse_types import parse_dim  # noqa: PLC0415 - parse_types reads literals

    return parse_dim(cur)


def parse_string(cur: Cursor, token) -> str:
    """The value of a string token (JSON escapes: `\\n`, `\\"`, `\\u00e9`)."""
    try:
        return json.loads(token.text)
    except json.JSONDecodeError as err:
        raise cur.error(token, f"bad escape in the string {token.text}: {err.msg}") from err
