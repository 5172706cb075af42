"""Tokens of the graph text format (Relay's): sigiled names, dotted identifiers, numbers with
dtype suffixes, strings, punctuation; comments (`//`, nested `/* */`) are skipped, and the
`#[metadata]` section is kept whole as one token for the metadata reader."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessel.graph.text.errors import parse_error
from tessel.support.span import Span

METADATA_MARKER = "#[metadata]"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NUMBER = re.compile(
    r"-?(?:(?:inf|nan)(?:bf16|f(?:16|32|64)?)"
    r"|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    r"(?:bf16|f16|f32|f64|f|i8|i16|i32|i64|i|u8|u16|u32|u64|u)?)"
    r"(?![A-Za-z0-9_])"
)
_INTEGER = re.compile(r"[0-9]+(?![A-Za-z0-9_])")
_LOCAL = re.compile(rf"%(?:{_NAME}|[0-9]+)")
_GLOBAL = re.compile(rf"@{_NAME}")
_IDENT = re.compile(rf"{_NAME}(?:\.{_NAME})*")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# `+ - *` appear only in symbolic dimensions (`Tensor[(n * 2, 3), float32]`).
_PUNCT = ("->", "#[", "(", ")", "[", "]", "{", "}", ",", ";", ":", "=", ".", "?", "+", "-", "*")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: `kind` is LOCAL, GLOBAL, IDENT, NUMBER, STRING, METADATA, EOF, or the
    punctuation itself; `text` is the source text (the metadata JSON for METADATA)."""

    kind: str
    text: str
    span: Span


class _Lexer:
    def __init__(self, source: str, file: str) -> None:
        self.source, self.file = source, file
        self.pos, self.line, self.line_start = 0, 1, 0
        self.tokens: list[Token] = []

    def span(self, start: int, end: int) -> Span:
        line, column = self.line, start - self.line_start + 1
        end_column = end - self.line_start + 1 if "\n" not in self.source[start:end] else column + 1
        return Span(self.file, line, column, line, end_column)

    def fail(self, start: int, end: int, message: str, hint: str | None = None) -> None:
        raise parse_error(message, self.span(start, max(end, start + 1)), self.source, hint)

    def run(self) -> list[Token]:
        while self._skip_space_and_comments():
            if self.source.startswith(METADATA_MARKER, self.pos):
                self._metadata()
                break
            self.tokens.append(self._token())
        self.tokens.append(Token("EOF", "", self._end_span()))
        return self.tokens

    def _end_span(self) -> Span:
        """Just past the last token, so an error at the end shows the line where text stops."""
        real = [t for t in self.tokens if t.kind != "METADATA"]
        if not real:
            return Span(self.file, 1, 1, 1, 2)
        last = real[-1].span
        return Span(self.file, last.end_line, last.end_column, last.end_line, last.end_column + 1)

    def _skip_space_and_comments(self) -> bool:
        """Advance over blanks and comments; False at the end of the source."""
        source = self.source
        while self.pos < len(source):
            char = source[self.pos]
            if char == "\n":
                self.pos += 1
                self.line, self.line_start = self.line + 1, self.pos
            elif char in " \t\r":
                self.pos += 1
            elif source.startswith("//", self.pos):
                newline = source.find("\n", self.pos)
                self.pos = len(source) if newline < 0 else newline
            elif source.startswith("/*", self.pos):
                self._block_comment()
            else:
                return True
        return False

    def _block_comment(self) -> None:
        start, depth = self.pos, 0
        for match in re.compile(r"/\*|\*/|\n").finditer(self.source, self.pos):
            if match.group() == "\n":
                self.line, self.line_start = self.line + 1, match.end()
                continue
            depth += 1 if match.group() == "/*" else -1
            if depth == 0:
                self.pos = match.end()
                return
        self.pos = start
        self.line, self.line_start = self._line_of(start)
        self.fail(start, start + 2, "this `/*` comment is never closed", hint="end it with `*/`")

    def _line_of(self, offset: int) -> tuple[int, int]:
        return self.source.count("\n", 0, offset) + 1, self.source.rfind("\n", 0, offset) + 1

    def _metadata(self) -> None:
        start = self.pos
        self.pos = len(self.source)
        text = self.source[start + len(METADATA_MARKER) :]
        self.tokens.append(Token("METADATA", text, self.span(start, start + len(METADATA_MARKER))))

    def _token(self) -> Token:
        start, source = self.pos, self.source
        after_dot = bool(self.tokens) and self.tokens[-1].kind == "."
        for kind, pattern in self._patterns(after_dot):
            match = pattern.match(source, start)
            if match:
                return self._take(kind, match.end())
        for punct in _PUNCT:
            if source.startswith(punct, start):
                return self._take(punct, start + len(punct))
        if source[start] == '"':
            self.fail(
                start, start + 1, "this string is never closed on its line", hint='end it with `"`'
            )
        if source[start] in "%@":
            self.fail(start, start + 1, f"`{source[start]}` must be followed by a name")
        self.fail(start, start + 1, f"unexpected character `{source[start]}`")
        raise AssertionError("unreachable")

    @staticmethod
    def _patterns(after_dot: bool) -> tuple[tuple[str, re.Pattern[str]], ...]:
        # After `.` only a plain integer may follow (`%t.0`), so `%t.0.1` is two projections.
        number = ("NUMBER", _INTEGER if after_dot else _NUMBER)
        return (
            number,
            ("LOCAL", _LOCAL),
            ("GLOBAL", _GLOBAL),
            ("IDENT", _IDENT),
            ("STRING", _STRING),
        )

    def _take(self, kind: str, end: int) -> Token:
        token = Token(kind, self.source[self.pos : end], self.span(self.pos, end))
        self.pos = end
        return token


def tokenize(source: str, file: str = "<graph>") -> list[Token]:
    """The tokens of `source`, ending with EOF (a METADATA token, if any, comes just before)."""
    return _Lexer(source, file).run()
