"""Target: what code is generated for, and the target-dependent limits lowering reads."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.support.errors import UserError

_KINDS = ("c",)


@dataclass(frozen=True, slots=True)
class Target:
    """A code-generation target. `max_stack_alloca_size` bounds stack allocations (seed 002);
    `vector_bytes` is the width of one vector chunk when a loop is vectorized without a
    `vector_length` (32 bytes: 8 float32 lanes, an AVX2 register)."""

    kind: str = "c"
    max_stack_alloca_size: int = 1024
    link_params: bool = False
    vector_bytes: int = 32

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise UserError(
                f"unknown target kind {self.kind!r}", rule="target.kind", hint=f"use one of {_KINDS}"
            )
        if self.max_stack_alloca_size < 0:
            raise UserError("max_stack_alloca_size must be >= 0", rule="target.stack-size")
        if self.vector_bytes < 2:
            raise UserError("vector_bytes must be at least 2", rule="target.vector-bytes")

    @staticmethod
    def of(value: Target | str) -> Target:
        """A Target from a Target or a kind name such as "c"."""
        return value if isinstance(value, Target) else Target(kind=value)
