"""ParseError: TVMScript that Tessel cannot turn into IR, pointing at the source at fault."""

from __future__ import annotations

from tessel.support.errors import UserError
from tessel.support.span import Span


class ParseError(UserError):
    """TVMScript that Tessel cannot turn into IR."""

    def __init__(self, message: str, span: Span, source: str, hint: str | None = None) -> None:
        super().__init__(message, span=span, hint=hint, rule="script.parse")
        self.span: Span = span
        self.source = source

    def __str__(self) -> str:
        where = f"{self.span.file}:{self.span.line}:{self.span.column}"
        text = f"{where}: error: {self.message}\n{self.span.excerpt(self.source)}"
        return text + (f"\nhint: {self.hint}" if self.hint else "")


class ArgumentError(UserError):
    """A `T.*` helper got a bad argument; the parser reports it at that argument.

    `argument` is the position (int) or keyword (str) of the argument at fault.
    """

    def __init__(self, message: str, argument: int | str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint, rule="script.argument")
        self.argument = argument
