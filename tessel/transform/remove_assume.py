"""RemoveAssume: drop `T.assume` statements, compile-time facts that have no run-time code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.expr import Call
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Evaluate
from tessel.transform.no_op import NoOpDroppingMutator, no_op
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class RemoveAssume(PrimFuncPass):
    """Remove every `T.evaluate(T.assume(...))`; the analyzer has used them by now."""

    name: ClassVar[str] = "remove_assume"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_AssumeRemover().visit(func.body))


class _AssumeRemover(NoOpDroppingMutator):
    def visit_Evaluate(self, stmt: Evaluate) -> Node:
        value = stmt.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            return no_op()
        return stmt
