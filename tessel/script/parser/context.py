"""Parser state: nested name scopes, and the frames (function, block, init) being filled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tessel.ir.expr import PrimExpr, Range, Var
from tessel.support.dtype import DataType
from tessel.tir.block import IterVar, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferRegion


class Scopes:
    """Names bound by the script, innermost scope last; Python values from outside underneath."""

    def __init__(self, outer: dict[str, Any]) -> None:
        self.outer = outer
        self.stack: list[dict[str, Any]] = [{}]
        self.defined_vars: set[int] = set()  # ids of Vars the script has defined

    def push(self) -> None:
        """Open a nested scope."""
        self.stack.append({})

    def pop(self) -> None:
        """Close the innermost scope."""
        self.stack.pop()

    def bind(self, name: str, value: Any) -> None:
        """Bind `name` in the innermost scope (a Var bound here counts as defined)."""
        self.stack[-1][name] = value
        if isinstance(value, Var):
            self.defined_vars.add(id(value))
        if isinstance(value, Buffer):
            self.defined_vars.add(id(value.data))

    def lookup(self, name: str) -> tuple[bool, Any]:
        """(found, value): script names first, innermost first, then the outer namespace."""
        for scope in reversed(self.stack):
            if name in scope:
                return True, scope[name]
        if name in self.outer:
            return True, self.outer[name]
        return False, None

    def is_script_name(self, name: str) -> bool:
        """True if the script itself bound `name` (not the enclosing Python scope)."""
        return any(name in scope for scope in self.stack)

    def is_defined(self, var: Var) -> bool:
        """True if the script bound `var` (False for a fresh `T.int32()` not yet named)."""
        return id(var) in self.defined_vars

    def names(self) -> list[str]:
        """Every visible name (for "did you mean" hints)."""
        seen: dict[str, None] = dict.fromkeys(self.outer)
        for scope in self.stack:
            seen.update(dict.fromkeys(scope))
        return list(seen)


@dataclass
class FunctionFrame:
    """What the function body contributes to the PrimFunc besides its statements."""

    params: list[Var] = field(default_factory=list)
    buffer_map: dict[Var, Buffer] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    root_alloc_buffers: list[Buffer] = field(default_factory=list)
    has_blocks: bool = False
    loop_ranges: dict[int, Range] = field(default_factory=dict)  # id(loop var) -> its range
    env_threads: dict[int, str] = field(default_factory=dict)  # id(thread var) -> thread tag
    ret_type: DataType | None = None  # `-> T.int32`: what `return value` gives back


@dataclass
class BlockFrame:
    """A block being parsed: the header statements fill these fields."""

    name: str
    iter_vars: list[IterVar] = field(default_factory=list)
    iter_values: list[PrimExpr] = field(default_factory=list)
    reads: tuple[BufferRegion, ...] | None = None
    writes: tuple[BufferRegion, ...] | None = None
    predicate: PrimExpr | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    alloc_buffers: list[Buffer] = field(default_factory=list)
    match_buffers: list[MatchBufferRegion] = field(default_factory=list)
    init: Any = None
    explicit_root: bool = False


@dataclass
class BodyFrame:
    """A nested statement body (loop, if, init, ...): block header statements may not appear."""

    kind: str


Frame = FunctionFrame | BlockFrame | BodyFrame
