"""The base of every IR node, and `with_changes`, the one way to edit a node."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from tessel.ir import printer_slot
from tessel.support.frozen_map import FrozenMap
from tessel.support.span import Span

N = TypeVar("N", bound="Node")


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """Base of every IR node: immutable, compared by identity, printed as TVMScript."""

    span: Span | None = field(default=None, kw_only=True)  # never part of structural equality

    def __str__(self) -> str:
        return printer_slot.print_node(self)

    def script(self) -> str:
        """This node printed in the TVMScript dialect."""
        return printer_slot.print_node(self)


def with_changes(node: N, /, **changes: object) -> N:
    """Return `node` with fields replaced; the same object if every new value is the old one."""
    if all(getattr(node, name) is value for name, value in changes.items()):
        return node
    return dataclasses.replace(node, **changes)  # re-runs __post_init__ validation


@cache
def field_names(cls: type) -> tuple[str, ...]:
    """The dataclass fields of an IR node class that carry meaning (all but `span`)."""
    # `compare=False` marks derived fields (a graph expression's checked type): not meaning.
    return tuple(
        f.name for f in dataclasses.fields(cls) if f.name != "span" and f.init and f.compare
    )


# Declared field types that never hold a node. IR walks visit every node of a program, most of
# them leaves (constants, variables) whose fields are all of these: skipped unread, a leaf costs
# a walk next to nothing.
_NODE_FREE_TYPES = frozenset(
    {
        "bool",
        "int",
        "float",
        "str",
        "DataType",
        "ForKind",
        "IterVarType",
        "np.ndarray",
        "tuple[int, ...]",
        "int | None",
        "str | None",
        "DataType | None",
        "np.ndarray | None",
    }
)


@cache
def declared_types(cls: type) -> FrozenMap[str, str]:
    """Each dataclass field of `cls` and its declared type, as written (`"tuple[PrimExpr, ...]"`):
    what the walks below decide by which fields to read."""
    return FrozenMap((f.name, _type_text(f.type)) for f in dataclasses.fields(cls))


def _type_text(annotation: object) -> str:
    if isinstance(annotation, str):
        return annotation
    return getattr(annotation, "__name__", repr(annotation))


@cache
def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of `field_names` that may hold nodes (a node, a tuple of nodes, a map): all
    but those declared with a type that holds none (`int`, `str`, `DataType`, ...)."""
    declared = declared_types(cls)
    return tuple(name for name in field_names(cls) if declared[name] not in _NODE_FREE_TYPES)


def is_node_tuple(value: object) -> bool:
    """Whether `value` is a non-empty tuple of nodes (a field IR walks descend into)."""
    return (
        isinstance(value, tuple)
        and len(value) > 0
        and isinstance(value[0], Node)
        and all(isinstance(v, Node) for v in value)
    )


def child_items(node: Node) -> list[tuple[str, Any]]:
    """(field name, value) for each field holding a node or a tuple of nodes."""
    items = []
    for name in node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, Node) or is_node_tuple(value):
            items.append((name, value))
    return items


def child_nodes(node: Node) -> list[Node]:
    """The nodes `node` holds, in field order, a tuple's nodes in place of the tuple."""
    children: list[Node] = []
    for name in node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, Node):
            children.append(value)
        elif is_node_tuple(value):
            children.extend(value)
    return children
