"""Visitors and mutators dispatching on node type (`visit_<NodeClass>`, looked up along the MRO)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any, ClassVar, TypeVar

from tessel.ir.node import Node, child_nodes, is_node_tuple, node_fields, with_changes
from tessel.support.frozen_map import FrozenMap

N = TypeVar("N", bound=Node)


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
    """Walk IR read-only. Override `visit_<NodeClass>`; call `generic_visit` to go deeper.

    Nodes without an override are walked with an explicit stack, so only overridden nodes
    cost Python frames: a long chain of generic nodes (nested lets, a deep expression) cannot
    hit the recursion limit.
    """

    # A subclass that overrides `visit` for some nodes only (statements, say) names their
    # class here; the others are dispatched directly, without recursion through the override.
    visit_wraps: ClassVar[type | tuple[type, ...]] = Node

    def visit(self, node: Node) -> None:
        method = _method_for(type(self), type(node))
        if method is _GENERIC_VISIT:
            self.generic_visit(node)
        else:
            method(self, node)

    def generic_visit(self, node: Node) -> None:
        cls = type(self)
        routes = _visitor_routes(cls)
        stack = _children_reversed(node)
        while stack:
            child = stack.pop()
            method = routes.get(type(child))
            if method is None:
                method = routes.setdefault(type(child), _visitor_route(cls, type(child)))
            if method is _GENERIC_VISIT:
                stack.extend(_children_reversed(child))
            elif method is not _NOTHING_TO_VISIT:
                method(self, child)


def _nothing_to_visit(visitor: Visitor, node: Node) -> None:
    """A generic visit of a node that holds no node (a constant)."""


_NOTHING_TO_VISIT = _nothing_to_visit


@cache
def _visitor_routes(visitor_cls: type) -> dict[type, Callable[..., Any]]:
    """The method `Visitor.generic_visit` calls for each node class met so far (one dict lookup
    a node)."""
    return {}


def _visitor_route(visitor_cls: type, node_cls: type) -> Callable[..., Any]:
    plain = visitor_cls.visit is Visitor.visit  # else the nodes it wraps go through the override
    if not plain and issubclass(node_cls, visitor_cls.visit_wraps):
        return visitor_cls.visit
    method = _method_for(visitor_cls, node_cls)
    if method is _GENERIC_VISIT and not node_fields(node_cls):
        return _NOTHING_TO_VISIT
    return method


def _children_reversed(node: Node) -> list[Node]:
    """The child nodes of `node`, last first (the order a stack pops them in is the fields')."""
    children = child_nodes(node)
    children.reverse()
    return children


class Mutator:
    """Rebuild IR bottom-up.

    Override `visit_<NodeClass>` for the nodes you change. Every other node is rebuilt
    generically, and a subtree that did not change comes back as the same object. Nodes that
    are shared definitions (buffers) are rebuilt once per mutator, so every use of a buffer
    keeps pointing at one object. Nodes without an override are rebuilt with an explicit stack,
    so only overridden nodes cost Python frames (deep IR must not hit the recursion limit).
    """

    # As Visitor.visit_wraps: the nodes an overridden `visit` is for.
    visit_wraps: ClassVar[type | tuple[type, ...]] = Node

    def __init__(self) -> None:
        self.memo: dict[int, Node] = {}

    def visit(self, node: Node) -> Node:
        method = _method_for(type(self), type(node))
        if method is _GENERIC_MUTATE:
            return self.generic_visit(node)
        return method(self, node)

    def generic_visit(self, node: Node) -> Node:
        if getattr(type(node), "structural_binding", None) is not None:
            return self.visit_memoized(node)
        return self._rebuild(node)

    def visit_memoized(self, node: Node) -> Node:
        """Rebuild a shared definition once and reuse the result for every later use."""
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._rebuild(node)
        return self.memo[key]

    def _rebuild(self, root: Node) -> Node:
        """`root` with every child visited: generic descendants on an explicit stack (each a
        `_Frame` collecting its children's results), overridden ones through their method."""
        routes = _mutator_routes(type(self))
        frames = [_Frame(root)]
        while True:
            frame = frames[-1]
            if frame.next < len(frame.children):
                child = frame.children[frame.next]
                frame.next += 1
                pushed = self._step(child, routes, frame.results)
                if pushed is not None:
                    frames.append(pushed)
                continue
            frames.pop()
            new = frame.assemble()
            if frame.memoize:
                self.memo[id(frame.node)] = new
            if not frames:
                return new
            frames[-1].results.append(new)

    def _step(
        self, child: Any, routes: dict[type, tuple[str, str | None]], results: list[Any]
    ) -> _Frame | None:
        """Visit `child`, appending its result to `results`, or return the frame that rebuilds
        it generically (its result comes when the frame is done)."""
        found = routes.get(type(child))
        if found is None:
            if not isinstance(child, Node):
                results.append(child)
                return None
            found = routes.setdefault(type(child), _route(type(self), type(child)))
        route, only_field = found
        if route is _VISIT or (route is not _GENERIC and id(child) in self.memo):
            results.append(self.visit(child))
            return None
        if route is not _LEAF and (only_field is None or getattr(child, only_field) is not None):
            pushed = _Frame(child, memoize=route is _BINDING)
            if pushed.children:
                return pushed
        # A node holding no node (a constant; a variable without a type annotation) is its own
        # result.
        if route is _BINDING:
            self.memo[id(child)] = child
        results.append(child)
        return None


# How `Mutator._rebuild` reaches a child of a node class: through `visit` (an override, or a
# class an overridden `visit` wraps), or generically on its stack (memoized for definitions),
# or not at all when the class has no field that may hold a node (its nodes are their own
# results; a definition among them is still looked up in the memo first).
_VISIT, _GENERIC, _BINDING, _LEAF = "visit", "generic", "binding", "leaf"


@cache
def _mutator_routes(mutator_cls: type) -> dict[type, tuple[str, str | None]]:
    """The route of each node class met so far (filled as classes are met: one dict lookup a
    child, where dispatch had cost several attribute and cache lookups)."""
    return {}


def _route(mutator_cls: type, node_cls: type) -> tuple[str, str | None]:
    """The route of `node_cls`, and its field that may hold a node where it has just one."""
    plain = mutator_cls.visit is Mutator.visit  # else the nodes it wraps go through the override
    if not plain and issubclass(node_cls, mutator_cls.visit_wraps):
        return _VISIT, None
    if _method_for(mutator_cls, node_cls) is not _GENERIC_MUTATE:
        return _VISIT, None
    fields = node_fields(node_cls)
    if not fields:
        return _LEAF, None
    binding = getattr(node_cls, "structural_binding", None) is not None
    return (_BINDING if binding else _GENERIC), (fields[0] if len(fields) == 1 else None)


class _Frame:
    """One node being rebuilt by `Mutator._rebuild`: the values to visit, in the order a
    recursive walk visits them (node fields, then the keys and values of maps), and the
    results so far."""

    __slots__ = ("children", "maps", "memoize", "next", "node", "results", "slots")

    def __init__(self, node: Node, memoize: bool = False) -> None:
        self.node, self.memoize, self.next = node, memoize, 0
        self.results: list[Any] = []
        children: list[Any] = []
        slots: list[tuple[str, Any]] = []
        maps: list[tuple[str, FrozenMap]] = []
        for name in node_fields(type(node)):  # one pass over the fields: this runs per node
            value = getattr(node, name)
            if isinstance(value, Node):
                slots.append((name, value))
                children.append(value)
            elif isinstance(value, FrozenMap):  # e.g. PrimFunc.buffer_map
                maps.append((name, value))
            elif is_node_tuple(value):
                slots.append((name, value))
                children.extend(value)
        for _, mapping in maps:
            for key, value in mapping.items():
                children.extend((key, value))
        self.children, self.slots, self.maps = children, slots, maps

    def assemble(self) -> Node:
        """The node rebuilt from the results; the same object if no child changed."""
        changes: dict[str, Any] = {}
        results, at = self.results, 0
        for name, old in self.slots:
            if isinstance(old, Node):
                new = results[at]
                at += 1
                if new is not old:
                    changes[name] = new
            else:
                items = results[at : at + len(old)]
                at += len(old)
                if any(n is not o for n, o in zip(items, old, strict=True)):
                    changes[name] = tuple(items)
        for name, mapping in self.maps:
            flat = results[at : at + 2 * len(mapping)]
            at += len(flat)
            pairs = list(zip(flat[0::2], flat[1::2], strict=True))
            if any(
                nk is not k or nv is not v
                for (nk, nv), (k, v) in zip(pairs, mapping.items(), strict=True)
            ):
                changes[name] = FrozenMap(pairs)
        return with_changes(self.node, **changes) if changes else self.node


_GENERIC_VISIT = Visitor.generic_visit
_GENERIC_MUTATE = Mutator.generic_visit


def post_order(root: Node) -> Iterator[Node]:
    """Every node under `root` (itself included), children before parents; iterative."""
    children = child_nodes(root)
    if not children:
        yield root
        return
    # Each entry is a node and what is left of its children; a leaf is never pushed.
    stack = [(root, iter(children))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            grandchildren = child_nodes(child)
            if grandchildren:
                stack.append((child, iter(grandchildren)))
                break
            yield child
        else:
            stack.pop()
            yield node


def pending_post_order(
    root: N, operands: Callable[[N], Sequence[N]], is_done: Callable[[N], bool]
) -> Iterator[N]:
    """The nodes under `root` reached through `operands` that are not done, each after its
    operands (left to right) and `root` last; iterative. `is_done` is asked as the caller
    records each node's result, so a shared subexpression comes once: bottom-up printers and
    rewriters of expressions whose depth must not become Python's recursion."""
    stack: list[tuple[N, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if is_done(node):
            continue
        if expanded:
            yield node
            continue
        stack.append((node, True))
        stack.extend((operand, False) for operand in reversed(operands(node)))


def mentions(root: Node, var: Node) -> bool:
    """Whether `var` (a variable, compared by identity) occurs anywhere under `root`."""
    return any(node is var for node in post_order(root))
