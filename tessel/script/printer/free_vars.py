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


def _definitions(func: PrimFunc, nodes: list[Any]) -> tuple[set[int], set[int]]:
    """ids of the variables and buffers the function defines."""
    variables = {id(p) for p in func.params}
    buffers: set[int] = set()
    declared = list(func.buffer_map.values())
    for node in nodes:
        name = _DEFINING_FIELD.get(type(node))
        if name is not None:
            variables.add(id(getattr(node, name)))
        if isinstance(node, Block):
            declared.extend(node.alloc_buffers)
            declared.extend(m.buffer for m in node.match_buffers)
        elif isinstance(node, DeclBuffer):
            buffers.add(id(node.buffer))
    buffers.update(id(b) for b in declared)
    variables.update(id(b.data) for b in declared)  # created by the declaration itself
    return variables, buffers


def free_names(func: PrimFunc) -> FreeNames:
    """The variables and buffers `func` uses without a definition."""
    nodes = list(walk((func.params, tuple(func.buffer_map.values()), func.body)))
    defined_vars, defined_buffers = _definitions(func, nodes)
    free, seen = FreeNames(), set()
    for node in nodes:
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Var) and id(node) not in defined_vars:
            free.variables.append(node)
        elif isinstance(node, Buffer) and id(node) not in defined_buffers:
            free.buffers.append(node)
    return free
