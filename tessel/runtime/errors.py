"""BuildError: C code could not be compiled or loaded."""

from __future__ import annotations

from tessel.support.errors import UserError


class BuildError(UserError):
    """Building native code failed; `stderr` holds the C compiler's output when it ran."""

    def __init__(
        self, message: str, *, stderr: str = "", rule: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, rule=rule, hint=hint)
        self.stderr = stderr

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\ncompiler output:\n{self.stderr}" if self.stderr else text
