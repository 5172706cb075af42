"""DeadCodeElimination: drop let bindings nobody reads and module functions nobody calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from tessel.graph.expr import Call, Expr, Function, Let, Var
from tessel.graph.passes.rewriter import ExprRewriter, rewrite_functions
from tessel.graph.traversal import post_order_exprs, read_children
from tessel.ir.expr import GlobalVar
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import Pass, PassContext
from tessel.support.frozen_map import FrozenMap

# Every graph operator is pure (no operator has an effect), and so is every function call, as
# Relay assumes unless told otherwise; a dead binding may therefore always go.


def _bound_vars(expr: Expr) -> tuple[Var, ...]:
    """The variables `expr` binds (its parameters or its let variable)."""
    if isinstance(expr, Function):
        return expr.params
    if isinstance(expr, Let):
        return (expr.var,)
    return ()


def _let_var_uses(func: Function) -> Counter[Var]:
    """How many places read each let-bound variable (a shared node counts once)."""
    uses: Counter[Var] = Counter()
    for node in post_order_exprs(func):
        for child in read_children(node):
            if isinstance(child, Var):
                uses[child] += 1
    return uses


def _mentions(expr: Expr, var: Var) -> bool:
    return any(node is var for node in post_order_exprs(expr))


class _InlineOnce(ExprRewriter):
    """Replace each let variable read in one place by its value, and drop its binding."""

    def __init__(self, uses: Counter[Var]) -> None:
        super().__init__()
        self.uses = uses

    def bind_let(self, let: Let, value: Expr) -> None:
        recursive = isinstance(value, Function) and _mentions(value, let.var)
        if self.uses[let.var] == 1 and not recursive:
            self.subst[let.var] = value

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if isinstance(new, Let) and new.var in self.subst:
            return new.body
        return new


class _DropDeadLets(ExprRewriter):
    """Bottom-up, with the let variables each rebuilt node reads: a let whose body (already
    cleaned) does not read its variable is replaced by the body, so chains die in one walk."""

    def __init__(self, let_vars: set[Var]) -> None:
        super().__init__()
        self.let_vars = let_vars
        self.reads: dict[int, frozenset[Var]] = {}

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if isinstance(new, Let) and new.var not in self._reads(new.body):
            return new.body
        if id(new) not in self.reads:
            self.reads[id(new)] = self._compute_reads(new)
        return new

    def _reads(self, expr: Expr) -> frozenset[Var]:
        if id(expr) not in self.reads:  # a binder, or a node kept whole
            self.reads[id(expr)] = self._compute_reads(expr)
        return self.reads[id(expr)]

    def _compute_reads(self, expr: Expr) -> frozenset[Var]:
        if isinstance(expr, Var):
            return frozenset((expr,)) if expr in self.let_vars else frozenset()
        reads: set[Var] = set()
        for child in read_children(expr):
            reads |= self._reads(child)
        return frozenset(reads.difference(_bound_vars(expr)))


def _clean(func: Function, inline_once: bool) -> Function:
    let_vars = {node.var for node in post_order_exprs(func) if isinstance(node, Let)}
    if not let_vars:
        return func
    func = _DropDeadLets(let_vars).rewrite(func)  # first, so reads from dead code do not count
    if inline_once:
        func = _InlineOnce(_let_var_uses(func)).rewrite(func)
    return func


def _callees(func: Any) -> set[str]:
    """Names of the module functions `func` refers to."""
    if isinstance(func, Function):
        nodes: Any = (
            item
            for node in post_order_exprs(func)
            if isinstance(node, Call)
            for item in (node.op, *node.args)
        )
    elif isinstance(func, Node):
        nodes = post_order(func)
    else:
        return set()
    return {node.name_hint for node in nodes if isinstance(node, GlobalVar)}


def _reachable(mod: IRModule, entries: tuple[str, ...]) -> set[str]:
    by_name = {gv.name_hint: func for gv, func in mod.items()}
    todo = [name for name in entries if name in by_name]
    seen = set(todo)
    while todo:
        for callee in _callees(by_name[todo.pop()]) - seen:
            if callee in by_name:
                seen.add(callee)
                todo.append(callee)
    return seen


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove let bindings whose variable is never read (all graph code is pure), and, with
    `remove_unused_functions`, module functions not reachable from `entry_functions` (a module
    with none of them is left whole). `inline_once` also replaces a let variable read in exactly
    one place by its value, as Relay's option of that name does."""

    inline_once: bool = False
    remove_unused_functions: bool = True
    entry_functions: tuple[str, ...] = ("main",)
    name: ClassVar[str] = "dead_code_elimination"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = rewrite_functions(mod, lambda _, func: _clean(func, self.inline_once))
        if not self.remove_unused_functions or not any(n in mod for n in self.entry_functions):
            return mod
        live = _reachable(mod, self.entry_functions)
        if len(live) == len(mod.functions):
            return mod
        kept = {gv: func for gv, func in mod.items() if gv.name_hint in live}
        return with_changes(mod, functions=FrozenMap(kept))


__all__ = ["DeadCodeElimination"]
