"""Visitors and mutators dispatching on node type (`visit_<NodeClass>`, looked up along the MRO)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from tessel.ir.node import Node, child_items, field_names, with_changes
from tessel.support.frozen_map import FrozenMap


@cache
def _method_for(functor_cls: type, node_cls: type) -> Callable[..., Any]:
    for klass in node_cls.__mro__:
        method = getattr(functor_cls, f"visit_{klass.__name__}", None)
        if method is not None:
            return method
    return functor_cls.generic_visit


@cache
def method_name(owner_cls: type, node_cls: type, prefix: str) -> str | None:
    """The name of `owner_cls`'s method `<prefix><NodeClass>` for the nearest class along
    `node_cls`'s MRO that has one (None if no class does): dispatch for printers."""
    for klass in node_cls.__mro__:
        name = f"{prefix}{klass.__name__}"
        if hasattr(owner_cls, name):
            return name
    return None


class Visitor:
    """Walk IR read-only. Override `visit_<NodeClass>`; call `generic_visit` to go deeper."""

    def visit(self, node: Node) -> None:
        _method_for(type(self), type(node))(self, node)

    def generic_visit(self, node: Node) -> None:
        for _, value in child_items(node):
            if isinstance(value, Node):
                self.visit(value)
            else:
                for child in value:
                    self.visit(child)


class Mutator:
    """Rebuild IR bottom-up.

    Override `visit_<NodeClass>` for the nodes you change. Every other node is rebuilt
    generically, and a subtree that did not change comes back as the same object. Nodes that
    are shared definitions (buffers) are rebuilt once per mutator, so every use of a buffer
    keeps pointing at one object.
    """

    def __init__(self) -> None:
        self.memo: dict[int, Node] = {}

    def visit(self, node: Node) -> Node:
        return _method_for(type(self), type(node))(self, node)

    def generic_visit(self, node: Node) -> Node:
        if getattr(type(node), "structural_binding", None) is not None:
            return self.visit_memoized(node)
        return self._rebuild(node)

    def _rebuild(self, node: Node) -> Node:
        changes = {}
        for name, old in child_items(node):
            if isinstance(old, Node):
                new = self.visit(old)
                if new is not old:
                    changes[name] = new
            else:
                new_items = tuple(self.visit(c) for c in old)
                if any(n is not o for n, o in zip(new_items, old, strict=True)):
                    changes[name] = new_items
        for name in field_names(type(node)):
            value = getattr(node, name)
            if isinstance(value, FrozenMap):  # e.g. PrimFunc.buffer_map: keep it in step
                changes[name] = self._rebuild_map(value)
        return with_changes(node, **changes)

    def _rebuild_map(self, mapping: FrozenMap) -> FrozenMap:
        """Visit the node keys and values of a map; the same map if none changed."""

        def visit_item(item: Any) -> Any:
            return self.visit(item) if isinstance(item, Node) else item

        old_items = list(mapping.items())
        items = [(visit_item(k), visit_item(v)) for k, v in old_items]
        if all(nk is k and nv is v for (nk, nv), (k, v) in zip(items, old_items, strict=True)):
            return mapping
        return FrozenMap(items)

    def visit_memoized(self, node: Node) -> Node:
        """Rebuild a shared definition once and reuse the result for every later use."""
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._rebuild(node)
        return self.memo[key]


def post_order(root: Node) -> Iterator[Node]:
    """Every node under `root` (itself included), children before parents; iterative."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        stack.append((node, True))
        children: list[Node] = []
        for _, value in child_items(node):
            children.extend([value] if isinstance(value, Node) else value)
        stack.extend((child, False) for child in reversed(children))


def mentions(root: Node, var: Node) -> bool:
    """Whether `var` (a variable, compared by identity) occurs anywhere under `root`."""
    return any(node is var for node in post_order(root))
