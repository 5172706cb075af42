"""LowerInitBlock: a block's `T.init()` becomes a guarded statement at the start of its body
(TVM's LowerInitBlock).

The init of a reduction block runs once per output element, on the first iteration of the
reduction; written out, that is `if <every reduction iterator == its domain's min>: init`
before the body. A block without reduction iterators runs its init unconditionally. Blocks stay
blocks, so later block passes still see iterators and regions; only the reduction iterators'
meaning for the init is spent here, which is why ConvertBlocksToOpaque (which drops the
iterators) needs this pass first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import builders
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.tir.block import Block, IterVarType
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import IfThenElse, SeqStmt, Stmt
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class LowerInitBlock(PrimFuncPass):
    """Replace every block's init by a guarded copy at the start of the block's body."""

    name: ClassVar[str] = "lower_init_block"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_InitLowerer().visit(func.body))


class _InitLowerer(Mutator):
    def visit_Block(self, block: Block) -> Node:
        visited = self.generic_visit(block)
        assert isinstance(visited, Block)
        if visited.init is None:
            return visited
        body = SeqStmt.flatten([_guarded_init(visited, visited.init), visited.body])
        return with_changes(visited, body=body, init=None)


def _guarded_init(block: Block, init: Stmt) -> Stmt:
    """`init` run only on the first iteration of every reduction iterator of `block`."""
    firsts = [
        builders.eq(iv.var, iv.dom.min)
        for iv in block.iter_vars
        if iv.iter_type is IterVarType.COMM_REDUCE
    ]
    if not firsts:
        return init
    return IfThenElse(builders.conjunction(firsts), init)
