"""ToGraphNormalForm: let-bound dataflow becomes one graph, as Relay's pass of that name does.

`let %a = add(%x, %x); let %b = multiply(%a, %x); %b` reads each let variable where its value
would stand; every graph operator is pure, so replacing the variable by that (shared) value
node computes the same, and fusion, LowerTE and the memory planner then see the dataflow graph
they work on. Lets of other values (functions, `if`) stay: a function may be recursive, and a
branch is only evaluated when taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.graph.expr import Call, Constant, Expr, Let, Tuple, TupleGetItem, Var
from tessel.graph.passes.rewriter import ExprRewriter, rewrite_functions
from tessel.ir.module import IRModule
from tessel.ir.transform import Pass, PassContext

_DATAFLOW = (Call, Tuple, TupleGetItem, Var, Constant)


class _InlineDataflowLets(ExprRewriter):
    """Substitute each let variable bound to a dataflow value by the value, and drop the let."""

    def bind_let(self, let: Let, value: Expr) -> None:
        if isinstance(value, _DATAFLOW):
            self.subst[let.var] = value

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if isinstance(new, Let) and new.var in self.subst:
            return new.body
        return new


@dataclass(frozen=True)
class ToGraphNormalForm(Pass):
    """Replace each let bound to a call, tuple, field, variable or constant by its value, so
    `main` written in let form compiles as the dataflow graph it is (iterative: a chain of
    thousands of lets is no deeper in Python than one)."""

    name: ClassVar[str] = "to_graph_normal_form"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return rewrite_functions(mod, lambda _, func: _InlineDataflowLets().rewrite(func))


__all__ = ["ToGraphNormalForm"]
