"""ExprRewriter: the bottom-up rebuild that the graph passes share.

It walks iteratively (deep dataflow graphs must not hit Python's recursion limit), rebuilds each
shared sub-expression once (a DAG stays a DAG), and keeps copy-on-write: a node whose children
did not change comes back as the same object. A let's value is rebuilt before its body, so a
pass can decide at `bind_let` to substitute the variable in the body (constant folding,
inlining).

Rebuilt nodes keep their `checked_type`: every pass that uses this rewriter preserves types,
and each runs InferType on what it changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from tessel.graph.expr import Expr, Function, Let, Var
from tessel.graph.passes.infer_type import InferType
from tessel.graph.traversal import read_children
from tessel.ir.expr import GlobalVar
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.support.frozen_map import FrozenMap

_ENTER, _BIND, _EXIT = 0, 1, 2


class ExprRewriter:
    """Rebuild a graph expression bottom-up. Override `rewrite_node` (called once per node with
    the original and the node rebuilt from rewritten children), and optionally `bind_let` and
    `enters`."""

    def __init__(self) -> None:
        self.memo: dict[int, Expr] = {}
        self.subst: dict[Var, Expr] = {}

    # -- hooks ------------------------------------------------------------------------------

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        """The replacement of `old`; `new` is `old` with rewritten children."""
        return new

    def bind_let(self, let: Let, value: Expr) -> None:
        """Called once the value of `let` is rewritten (to `value`), before its body."""

    def enters(self, func: Function) -> bool:
        """Whether to rewrite inside `func` (False keeps it whole: a Primitive function)."""
        return True

    # -- the walk ---------------------------------------------------------------------------

    def rewrite(self, root: Expr) -> Expr:
        """`root` rewritten."""
        stack: list[tuple[int, Expr]] = [(_ENTER, root)]
        while stack:
            action, node = stack.pop()
            if action == _BIND:
                # _BIND entries hold Lets
                self.bind_let(node, self.memo[id(node.value)])  # type: ignore[attr-defined, arg-type]
            elif action == _EXIT:
                self.memo[id(node)] = self.rewrite_node(node, self._rebuild(node))
            elif id(node) not in self.memo:
                stack.append((_EXIT, node))
                stack.extend(
                    (_BIND, c.let) if isinstance(c, _Bind) else (_ENTER, c)
                    for c in reversed(self._children(node))
                )
        return self.memo[id(root)]

    def _children(self, node: Expr) -> list[Any]:
        """The sub-expressions to rewrite first, with a BIND step between a let's value and
        body; binders (parameters, let variables) are not rewritten."""
        if isinstance(node, Let):
            return [node.value, _Bind(node), node.body]
        if isinstance(node, Function) and not self.enters(node):
            return []
        return list(read_children(node))

    def _new(self, child: Any) -> Any:
        if isinstance(child, Var) and child in self.subst:
            return self.subst[child]
        if isinstance(child, Expr):
            return self.memo.get(id(child), child)
        return child

    def _rebuild(self, node: Expr) -> Expr:
        if isinstance(node, Var):
            return self.subst.get(node, node)
        changes: dict[str, Any] = {}
        for item in fields(node):
            name = item.name
            if name in ("checked_type", "span", "params", "var"):  # binders stay
                continue
            if isinstance(node, Function) and not self.enters(node):
                break
            value = getattr(node, name)
            if isinstance(value, Expr):
                new = self._new(value)
            elif isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
                new = tuple(self._new(v) for v in value)
                if all(a is b for a, b in zip(new, value, strict=True)):
                    continue
            else:
                continue
            if new is not value:
                changes[name] = new
        return with_changes(node, **changes) if changes else node


class _Bind:
    """The step between a let's value and body (an item of the walk's stack)."""

    __slots__ = ("let",)

    def __init__(self, let: Let) -> None:
        self.let = let


def rewrite_functions(
    mod: IRModule, rewrite: Callable[[GlobalVar, Function], Function]
) -> IRModule:
    """Type `mod`, apply `rewrite` to each graph function, and type the result again; `mod`
    itself when no function changed."""
    typed = InferType()(mod)
    functions = {
        gv: rewrite(gv, func) if isinstance(func, Function) else func for gv, func in typed.items()
    }
    if all(functions[gv] is func for gv, func in typed.items()):
        return mod
    return InferType()(with_changes(typed, functions=FrozenMap(functions)))


def is_primitive(func: Function) -> bool:
    """A fused kernel (`Primitive=1`): passes before lowering leave its body alone."""
    return bool(func.attrs.get("Primitive", 0))
