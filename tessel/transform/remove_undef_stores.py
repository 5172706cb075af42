"""RemoveUndefStores: a store of `T.undef()` writes an unspecified value, so it is dropped.

Any other use of `T.undef()` is an error (docs/architecture.md §5): as an index it names no element,
and a value computed from it must not reach memory. A variable bound to `T.undef()` by a `let`
is the undef itself (as in TVM's RemoveStoreUndef): a store of it is dropped, and the binding
with it; any other use of the variable is refused by the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.expr import Call, Let, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, LetStmt
from tessel.transform.errors import LoweringError
from tessel.transform.no_op import NoOpDroppingMutator, no_op
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class RemoveUndefStores(PrimFuncPass):
    """Remove `B[...] = T.undef()` (docs/architecture.md §5: a store of undef is a no-op)."""

    name: ClassVar[str] = "remove_undef_stores"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_UndefStoreRemover().visit(func.body))


class _UndefStoreRemover(NoOpDroppingMutator):
    def __init__(self) -> None:
        super().__init__()
        self.undef_vars: set[Var] = set()  # variables a `let` binds to T.undef()

    def visit_LetStmt(self, let: LetStmt) -> Node:
        if _is_undef(let.value, self.undef_vars):
            self.undef_vars.add(let.var)
            return self.visit(let.body)  # the binding goes with the stores of it
        _refuse_undef(let.value, f"the value bound to `{let.var.name}`", self.undef_vars)
        return self.generic_visit(let)

    def visit_BufferStore(self, store: BufferStore) -> Node:
        if _is_undef(store.value, self.undef_vars):
            return no_op()
        for index in store.indices:
            _refuse_undef(index, f"an index of the store to `{store.buffer.name}`", self.undef_vars)
        _refuse_undef(store.value, f"the value stored to `{store.buffer.name}`", self.undef_vars)
        return store

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        for index in load.indices:
            _refuse_undef(index, f"an index of the load from `{load.buffer.name}`", self.undef_vars)
        return load


def _is_undef(expr: PrimExpr, undef_vars: set[Var]) -> bool:
    """True if `expr` is T.undef() itself: the call, a variable bound to it, or a `Let` whose
    body is one of those."""
    if builtin.is_undef(expr):
        return True
    if isinstance(expr, Var):
        return expr in undef_vars
    if isinstance(expr, Let) and _is_undef(expr.value, undef_vars):
        return _is_undef(expr.body, undef_vars | {expr.var})
    return False


def _refuse_undef(expr: PrimExpr, where: str, undef_vars: set[Var]) -> None:
    if any(_is_undef_leaf(n, undef_vars) for n in post_order(expr)):
        raise LoweringError(
            f"T.undef() is used in {where} (`{expr}`); an unspecified value may only be stored "
            "whole, never used as an index or computed with",
            rule="remove_undef_stores.undef-use",
        )


def _is_undef_leaf(node: Node, undef_vars: set[Var]) -> bool:
    if isinstance(node, Call):
        return node.op is builtin.undef_op
    return isinstance(node, Var) and node in undef_vars
