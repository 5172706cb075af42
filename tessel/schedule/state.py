"""Finding and replacing statements in an immutable function: the schedule's view of its IR.

TVM keeps mutable `StmtSRef`s; Tessel's IR is immutable, so a loop is found again by its loop
variable (kept by every rebuild) and a block by its name (unique in a function), and a change
replaces one statement and rebuilds its ancestors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from tessel.ir.expr import Var
from tessel.ir.node import Node, child_items, declared_types, node_fields, with_changes
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, Stmt


@dataclass(frozen=True)
class Located:
    """A statement and its ancestors (outermost first, the function body's root first)."""

    node: Stmt
    ancestors: tuple[Node, ...]

    def enclosing_loops(self) -> list[For]:
        """The For loops between the nearest enclosing block and this statement, outermost first."""
        loops: list[For] = []
        for ancestor in self.ancestors:
            if isinstance(ancestor, Block):
                loops = []
            elif isinstance(ancestor, For):
                loops.append(ancestor)
        return loops

    def init_owner(self) -> Block | None:
        """The block whose `T.init()` holds this statement (a blockized reduction's init), or
        None: an init runs as part of its block and is not scheduled on its own."""
        chain = (*self.ancestors, self.node)
        for k, ancestor in enumerate(chain[:-1]):
            if (
                isinstance(ancestor, Block)
                and ancestor.init is not None
                and chain[k + 1] is ancestor.init
            ):
                return ancestor
        return None

    def parent_block(self) -> Block | None:
        """The nearest Block above the statement (the scope it lives in)."""
        return next((a for a in reversed(self.ancestors) if isinstance(a, Block)), None)


# Declared field types that hold expressions, buffers or regions, never a statement: the walk
# below skips them (it runs for every lookup of a loop or block, so once per primitive).
_STATEMENT_FREE_TYPES = frozenset(
    {
        "PrimExpr",
        "PrimExpr | None",
        "tuple[PrimExpr, ...]",
        "Var",
        "tuple[Var, ...]",
        "Buffer",
        "tuple[Buffer, ...]",
        "Range",
        "tuple[IterVar, ...]",
        "tuple[BufferRegion, ...]",
        "tuple[MatchBufferRegion, ...]",
    }
)


@cache
def _statement_fields(cls: type) -> tuple[str, ...]:
    """The fields of `cls` that may hold statements."""
    declared = declared_types(cls)
    return tuple(n for n in node_fields(cls) if declared[n] not in _STATEMENT_FREE_TYPES)


def walk_with_ancestors(root: Node) -> Iterator[tuple[Node, tuple[Node, ...]]]:
    """Every statement-level node under `root` with its ancestors, pre-order, without recursion."""
    stack: list[tuple[Node, tuple[Node, ...]]] = [(root, ())]
    while stack:
        node, ancestors = stack.pop()
        yield node, ancestors
        children = []
        for name in _statement_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, tuple):
                children.extend(item for item in value if isinstance(item, Stmt))
            elif isinstance(value, Stmt):
                children.append(value)
        if children:
            inner = (*ancestors, node)
            stack.extend((child, inner) for child in reversed(children))


def find_loop(func: PrimFunc, loop_var: Var) -> Located | None:
    """The loop whose variable is `loop_var`, or None."""
    for node, ancestors in walk_with_ancestors(func.body):
        if isinstance(node, For) and node.loop_var is loop_var:
            return Located(node, ancestors)
    return None


def find_block_realize(func: PrimFunc, name: str) -> Located | None:
    """The BlockRealize of the block called `name`, or None."""
    for node, ancestors in walk_with_ancestors(func.body):
        if isinstance(node, BlockRealize) and node.block.name_hint == name:
            return Located(node, ancestors)
    return None


def block_names(func: PrimFunc) -> list[str]:
    """The names of all blocks, in program order."""
    return [n.name_hint for n, _ in walk_with_ancestors(func.body) if isinstance(n, Block)]


def replace_stmt(func: PrimFunc, old: Stmt, new: Stmt) -> PrimFunc:
    """`func` with the statement `old` (by identity) replaced by `new`, ancestors rebuilt."""
    return with_changes(func, body=_replace(func.body, lambda n: new if n is old else None))


def replace_in(root: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """`root` with the statement `old` (by identity) replaced by `new` (`new` if `old` is root)."""
    return new if old is root else _replace(root, lambda n: new if n is old else None)


def _replace(node: Node, pick: Callable[[Node], Node | None]) -> Node:
    found = pick(node)
    if found is not None:
        return found
    changes: dict[str, object] = {}
    for name, child in child_items(node):
        if isinstance(child, tuple):
            items = tuple(_replace(c, pick) if isinstance(c, Stmt) else c for c in child)
            if any(a is not b for a, b in zip(items, child, strict=True)):
                changes[name] = items
        elif isinstance(child, Stmt):
            new = _replace(child, pick)
            if new is not child:
                changes[name] = new
    return with_changes(node, **changes)
