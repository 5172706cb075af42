"""ScheduleError: which primitive, which rule, in plain words, with the culprits underlined."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.script.printer import script
from tessel.support.errors import UserError


class ScheduleError(UserError):
    """A schedule step breaks a rule of its primitive; the schedule is left unchanged.

    `str()` is the message followed by the function, printed with the culprit loops and blocks
    underlined (TVM's design, rendered as a pure function of the exception's data).
    """

    def __init__(
        self,
        primitive: str,
        rule: str,
        message: str,
        *,
        func: Any = None,
        culprits: Sequence[Any] = (),
        hint: str | None = None,
    ) -> None:
        super().__init__(f"{primitive}: {message}", rule=f"{primitive}.{rule}", hint=hint)
        self.primitive = primitive
        self.func = func
        self.culprits = tuple(culprits)

    def __str__(self) -> str:
        text = f"{self.message}  [{self.rule}]"
        if self.hint:
            text += f"\nhint: {self.hint}"
        if self.func is not None:
            text += "\n" + script(self.func, highlight=self.culprits)
        return text
