"""Variables and buffers a function uses without defining them (symbolic shapes, mostly).

The printer declares them at the top of the body (`n = T.int32()`), as the dialect requires a
variable to be declared before a shape (or `T.let`, which binds a declared variable) names it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tessel.ir.expr import Var
from tessel.ir.node import Node, field_names
from tessel.tir.block import Block, IterVar
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.reduce_expr import CommReducer
from tessel.tir.stmt import Allocate, AllocateConst, DeclBuffer, For, LetStmt

# Which field of each node defines a variable.
_DEFINING_FIELD = {
    For: "loop_var",
    LetStmt: "var",
    IterVar: "var",
    Allocate: "buffer_var",
    AllocateConst: "buffer_var",
}


@dataclass
class FreeNames:
    """What a function uses but never defines, in order of first use."""

    variables: list[Var] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    # Buffers over memory the body allocates, by id of the data variable: they are declared
    # right after the allocation (where TVM's printer puts them), so the text re-parses.
    views: dict[int, list[Buffer]] = field(default_factory=dict)


def walk(value: Any) -> Iterator[Any]:
    """Every node under `value` in pre-order, including inside annotation maps and tuples."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            yield item
            stack.extend(reversed([getattr(item, name) for name in field_names(type(item))]))
        elif isinstance(item, tuple | list):
            stack.extend(reversed(item))
        elif isinstance(item, Mapping):
            stack.extend(reversed([x for pair in item.items() for x in pair]))


@dataclass
class _Definitions:
    """ids of what the function defines; `local` are variables its body defines."""

    variables: set[int] = field(default_factory=set)
    buffers: set[int] = field(default_factory=set)
    local: set[int] = field(default_factory=set)


def _definitions(func: PrimFunc, nodes: list[Any]) -> _Definitions:
    """The variables and buffers the function defines."""
    defs = _Definitions(variables={id(p) for p in func.params})
    declared: list[Buffer] = []
    for node in nodes:
        name = _DEFINING_FIELD.get(type(node))
        if name is not None:
            defs.local.add(id(getattr(node, name)))
        if isinstance(node, CommReducer):  # its lambda's parameters
            defs.local.update(id(v) for v in (*node.lhs, *node.rhs))
        if isinstance(node, Block):
            declared.extend(node.alloc_buffers)
            declared.extend(m.buffer for m in node.match_buffers)
        elif isinstance(node, DeclBuffer):
            defs.buffers.add(id(node.buffer))
    defs.local.update(id(b.data) for b in declared)  # created by the declaration itself
    declared.extend(func.buffer_map.values())
    defs.buffers.update(id(b) for b in declared)
    defs.variables.update(defs.local)
    defs.variables.update(id(b.data) for b in func.buffer_map.values())
    return defs


def free_names(func: PrimFunc) -> FreeNames:
    """The variables and buffers `func` uses without a definition."""
    nodes = list(walk((func.params, tuple(func.buffer_map.values()), func.body)))
    defs = _definitions(func, nodes)
    free, seen = FreeNames(), set()
    for node in nodes:
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Var) and id(node) not in defs.variables:
            free.variables.append(node)
        elif isinstance(node, Buffer) and id(node) in defs.buffers:
            continue
        elif isinstance(node, Buffer) and id(node.data) in defs.local:
            free.views.setdefault(id(node.data), []).append(node)
        elif isinstance(node, Buffer):
            free.buffers.append(node)
    return free
