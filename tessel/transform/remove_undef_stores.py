"""RemoveUndefStores: a store of `T.undef()` writes an unspecified value, so it is dropped.

Any other use of `T.undef()` is an error (DESIGN.md section 5): as an index it names no element,
and a value computed from it must not reach memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.expr import Call, PrimExpr
from tessel.ir.functor import post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.function import PrimFunc
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore
from tessel.transform.errors import LoweringError
from tessel.transform.no_op import NoOpDroppingMutator, no_op
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class RemoveUndefStores(PrimFuncPass):
    """Remove `B[...] = T.undef()` (DESIGN.md section 5: a store of undef is a no-op)."""

    name: ClassVar[str] = "remove_undef_stores"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_UndefStoreRemover().visit(func.body))


class _UndefStoreRemover(NoOpDroppingMutator):
    def visit_BufferStore(self, store: BufferStore) -> Node:
        if builtin.is_undef(store.value):
            return no_op()
        for index in store.indices:
            _refuse_undef(index, f"an index of the store to `{store.buffer.name}`")
        _refuse_undef(store.value, f"the value stored to `{store.buffer.name}`")
        return store

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        for index in load.indices:
            _refuse_undef(index, f"an index of the load from `{load.buffer.name}`")
        return load


def _refuse_undef(expr: PrimExpr, where: str) -> None:
    if any(isinstance(n, Call) and n.op is builtin.undef_op for n in post_order(expr)):
        raise LoweringError(
            f"T.undef() is used in {where} (`{expr}`); an unspecified value may only be stored "
            "whole, never used as an index or computed with",
            rule="remove_undef_stores.undef-use",
        )
