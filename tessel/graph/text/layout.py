"""Where the printer puts each expression of one definition.

Blocks are the text's scopes: the top of a definition, a function body (`fn`), the branches of
an `if` (`then`, `else`), a parenthesized `let` (`paren`). An expression with a single use as a
block's result, a `let` value or a `let` body is printed in place ("inline"); every other
non-atomic expression is named by a `%N = ...;` line in the innermost block enclosing all its
uses (their lowest common ancestor), so a subexpression shared by two scopes prints once and the
parser rebuilds the same DAG. Everything here is iterative: deep graphs are fine.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.traversal import post_order_exprs, read_children
from tessel.ir.expr import GlobalVar, Op

TOP = "top"


def is_atom(expr: Any) -> bool:
    """Printed as itself wherever used: variables, globals, constants, operators."""
    return isinstance(expr, Var | GlobalVar | Constant | Op)


def edges(expr: Any) -> Iterator[tuple[str, Any]]:
    """(kind, child) for each child: kind is `operand`, `value`, `body`, or `root:<block>` for
    the result of a block that `expr` opens."""
    if isinstance(expr, Call):
        if isinstance(expr.op, Expr):
            yield "operand", expr.op
        yield from (("operand", a) for a in expr.args)
    elif isinstance(expr, Tuple):
        yield from (("operand", f) for f in expr.fields)
    elif isinstance(expr, TupleGetItem):
        yield "operand", expr.tuple_value
    elif isinstance(expr, If):
        yield "operand", expr.cond
        yield "root:then", expr.true_branch
        yield "root:else", expr.false_branch
    elif isinstance(expr, Function):
        yield "root:fn", expr.body
    elif isinstance(expr, Let):
        yield "value", expr.value
        yield "body", expr.body


def _non_atomic_children(expr: Any) -> tuple[Expr, ...]:
    return tuple(child for child in read_children(expr) if not is_atom(child))


class Layout:
    """The block each non-atomic expression below `root` is printed in, and which are inline."""

    def __init__(self, root: Expr) -> None:
        self.uses: dict[int, list[tuple[str, Any]]] = {id(root): [("root:top", None)]}
        self.parent_block: dict[Hashable, Hashable | None] = {TOP: None}
        self.depth: dict[Hashable, int] = {TOP: 0}
        self.place: dict[int, Hashable] = {}
        self.inline: set[int] = set()
        for node in self._topological(root):
            self._settle(node)

    def _topological(self, root: Expr) -> list[Any]:
        """Non-atomic nodes, every user before what it uses; records each node's uses."""
        order = list(post_order_exprs(root, _non_atomic_children))
        for node in order:
            for kind, child in edges(node):
                if not is_atom(child):
                    self.uses.setdefault(id(child), []).append((kind, node))
        order.reverse()
        return order

    def _settle(self, node: Any) -> None:
        uses = self.uses[id(node)]
        blocks = [self._block_of_use(kind, user) for kind, user in uses]
        if len(uses) == 1 and uses[0][0] != "operand":
            self.inline.add(id(node))
            self.place[id(node)] = blocks[0]
        else:
            self.place[id(node)] = self._common_ancestor(blocks)
        for kind, _ in edges(node):
            if kind.startswith("root:"):
                self._open(self.block_key(kind, node), self.place[id(node)])
        if isinstance(node, Let) and id(node) not in self.inline:
            self._open(("paren", id(node)), self.place[id(node)])

    def block_key(self, kind: str, node: Any) -> Hashable:
        return (kind[len("root:") :], id(node))

    def chain_block(self, let: Let) -> Hashable:
        """The block a `let`'s value and body print in: its own `( ... )` when it is named."""
        return self.place[id(let)] if id(let) in self.inline else ("paren", id(let))

    def _block_of_use(self, kind: str, user: Any) -> Hashable:
        if user is None:
            return TOP
        if kind == "operand":
            return self.place[id(user)]
        if kind in ("value", "body"):
            return self.chain_block(user)
        return self.block_key(kind, user)

    def _open(self, block: Hashable, parent: Hashable) -> None:
        self.parent_block[block] = parent
        self.depth[block] = self.depth[parent] + 1

    def _common_ancestor(self, blocks: list[Hashable]) -> Hashable:
        result = blocks[0]
        for block in blocks[1:]:
            a, b = result, block
            while self.depth[a] > self.depth[b]:
                a = self.parent_block[a]
            while self.depth[b] > self.depth[a]:
                b = self.parent_block[b]
            while a != b:
                a, b = self.parent_block[a], self.parent_block[b]
            result = a
        return result

    def is_inline(self, node: Any) -> bool:
        return id(node) in self.inline

    def is_bound_in(self, node: Any, block: Hashable) -> bool:
        """`node` gets a `%N = ...;` line in `block`."""
        return id(node) not in self.inline and self.place.get(id(node)) == block
