"""Runtime errors: C code could not be compiled or loaded (BuildError), or a compiled function
reported a failure when called (RuntimeCallError)."""

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


class RuntimeCallError(UserError, RuntimeError):
    """A compiled function returned an error (a failed assert, a division by zero, an allocation
    that failed); `c_message` is what the C code reported, `function` names the function.

    Also a RuntimeError, which is what calls raised before this class existed."""

    def __init__(self, function: str, c_message: str) -> None:
        super().__init__(f"`{function}` failed: {c_message}", rule="runtime.call-failed")
        self.function, self.c_message = function, c_message
