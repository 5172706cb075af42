"""Target: what code is generated for, and the target-dependent limits lowering reads."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.support.errors import UserError

_KINDS = ("c",)


@dataclass(frozen=True, slots=True)
class Target:
    """A code-generation target. `max_stack_alloca_size` bounds stack allocations (seed 002)."""

    kind: str = "c"
    max_stack_alloca_size: int = 1024
    link_params: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise UserError(
                f"unknown target kind {self.kind!r}", rule="target.kind", hint=f"use one of {_KINDS}"
            )
        if self.max_stack_alloca_size < 0:
            raise UserError("max_stack_alloca_size must be >= 0", rule="target.stack-size")

    @staticmethod
    def of(value: Target | str) -> Target:
        """A Target from a Target or a kind name such as "c"."""
        return value if isinstance(value, Target) else Target(kind=value)
