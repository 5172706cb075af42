"""RemoveUndefStores: a store of `T.undef()` writes an unspecified value, so it is dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore
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
        return no_op() if builtin.is_undef(store.value) else store
