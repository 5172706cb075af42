"""The error tree: every error Tessel raises on purpose is a `TesselError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tessel.support.span import Span


class TesselError(Exception):
    """Base of every error Tessel raises on purpose."""


class UserError(TesselError):
    """The input is wrong. The message says what, where, and what to do instead."""

    def __init__(
        self,
        message: str,
        *,
        span: Span | None = None,
        rule: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.span, self.rule, self.hint = message, span, rule, hint

    def __str__(self) -> str:
        text = self.message
        if self.span is not None:
            text = f"{self.span.file}:{self.span.line}:{self.span.column}: {text}"
        return text + (f"\nhint: {self.hint}" if self.hint else "")


class InternalError(TesselError):
    """A Tessel invariant broke: this is our bug. The message asks the user to report it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{message}\n(this is a bug in Tessel; please report it)")


class IRTypeError(UserError):
    """A node was built from inconsistent parts (dtype or arity mismatch)."""
