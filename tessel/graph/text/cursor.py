"""A cursor over graph-text tokens, with the error helpers every parsing rule uses, and the
stack of scopes that resolves `%name` references."""

from __future__ import annotations

from typing import Any

from tessel.graph.text.errors import parse_error
from tessel.graph.text.lexer import Token
from tessel.script.errors import ParseError
from tessel.support.span import Span

KEYWORDS = frozenset(
    {"def", "fn", "let", "if", "else", "meta", "free_var", "type", "True", "False", "None"}
)


def describe(token: Token) -> str:
    """A token as an error message names it."""
    if token.kind == "EOF":
        return "the end of the text"
    if token.kind == "METADATA":
        return "the `#[metadata]` section"
    return f"`{token.text}`"


def joined(first: Span, last: Span) -> Span:
    """The span from the start of `first` to the end of `last`."""
    return Span(first.file, first.line, first.column, last.end_line, last.end_column)


class Cursor:
    """Tokens with one position; `expect` raises a located ParseError naming what was expected."""

    def __init__(self, tokens: list[Token], source: str) -> None:
        self.tokens, self.source, self.pos = tokens, source, 0
        # Shape symbols by name: one variable per name in the whole text (`batch` in two
        # parameters' types is one size).
        self.shape_symbols: dict[str, Any] = {}

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def previous(self) -> Token:
        return self.tokens[max(self.pos - 1, 0)]

    def at(self, kind: str, text: str | None = None, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == kind and (text is None or token.text == text)

    def at_keyword(self, word: str) -> bool:
        return self.at("IDENT", word)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        return self.next() if self.at(kind, text) else None

    def expect(self, kind: str, what: str, hint: str | None = None) -> Token:
        """The next token if it is of `kind`; else an error "expected <what>, found ..."."""
        if self.at(kind):
            return self.next()
        raise self.error(self.missing_at(), f"expected {what}, found {describe(self.peek())}", hint)

    def missing_at(self) -> Span:
        """Where a missing token belongs: at the next token, or just past the previous one when
        the next token is on a later line (a forgotten `;` is reported on its own line)."""
        found = self.peek()
        if self.pos == 0 or found.kind == "EOF":
            return found.span
        last = self.previous().span
        if found.span.line <= last.end_line:
            return found.span
        return Span(last.file, last.end_line, last.end_column, last.end_line, last.end_column + 1)

    def expect_keyword(self, word: str, what: str | None = None) -> Token:
        if self.at_keyword(word):
            return self.next()
        found = describe(self.peek())
        raise self.error(self.missing_at(), f"expected {what or f'`{word}`'}, found {found}")

    def error(self, token: Token | Span, message: str, hint: str | None = None) -> ParseError:
        span = token.span if isinstance(token, Token) else token
        return parse_error(message, span, self.source, hint)


class Scopes:
    """Nested scopes of `%name` -> expression (a Var, or the value a `%N = ...;` binding names)."""

    def __init__(self) -> None:
        self.stack: list[dict[str, Any]] = [{}]

    def push(self) -> None:
        self.stack.append({})

    def pop(self) -> None:
        self.stack.pop()

    def define(self, name: str, value: Any) -> None:
        self.stack[-1][name] = value

    def defined_here(self, name: str) -> bool:
        return name in self.stack[-1]

    def lookup(self, name: str) -> Any | None:
        for scope in reversed(self.stack):
            if name in scope:
                return scope[name]
        return None
