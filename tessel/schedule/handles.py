"""Handles to blocks, loops and buffer axes that stay valid across primitives."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import Var


@dataclass(frozen=True, eq=False)
class BlockRV:
    """A block, by name (block names are unique within a function)."""

    name: str

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


@dataclass(frozen=True, eq=False)
class LoopRV:
    """A loop, by its loop variable (every rebuild of the loop keeps the variable)."""

    loop_var: Var

    def __repr__(self) -> str:
        return f"LoopRV({self.loop_var.name!r})"


@dataclass(frozen=True, eq=False)
class BufferAxisRV:
    """One axis of a buffer's current layout (the schedule keeps each buffer's axes in order)."""

    buffer: str

    def __repr__(self) -> str:
        return f"BufferAxisRV({self.buffer!r})"
