"""ConvertBlocksToOpaque: replace block iterators by the values their BlockRealize binds them to
(TVM's ConvertBlocksToOpaque).

Afterwards every block is opaque: it has no iterators and its realize binds nothing. The
block's body, its read/write regions, its match_buffer regions and its buffers' shapes use the
bound expressions (over the surrounding loop variables) instead. Blocks stay, with their
regions, predicates and allocations, so CompactBufferAllocation can still read the regions and
LowerOpaqueBlock has only opaque blocks to remove. An init must be lowered first
(LowerInitBlock): it is guarded by the reduction iterators this pass removes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class ConvertBlocksToOpaque(PrimFuncPass):
    """Substitute every block iterator by its binding, leaving blocks without iterators."""

    name: ClassVar[str] = "convert_blocks_to_opaque"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Opaquer().visit(func.body))


class _Opaquer(Mutator):
    def visit_BlockRealize(self, realize: BlockRealize) -> Node:
        # The block's own iterators are bound here, so its fields are visited without the
        # unbound-iterator check of `visit_Block`.
        block = self.generic_visit(realize.block)
        assert isinstance(block, Block)
        if not block.iter_vars:
            return with_changes(realize, block=block)
        if block.init is not None:
            raise LoweringError(
                f"block `{block.name_hint}` still has an init; its guard needs the reduction "
                "iterators this pass removes",
                rule="convert_blocks_to_opaque.init-not-lowered",
                hint="run LowerInitBlock first",
            )
        # Expressions hold no blocks, so the bound values need no visit of their own.
        bindings = {
            iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values, strict=True)
        }
        opaque = substitute(with_changes(block, iter_vars=()), bindings)
        return with_changes(realize, iter_values=(), block=opaque)

    def visit_Block(self, block: Block) -> Node:
        # Only a block without a BlockRealize (a bare root block) arrives here.
        if block.iter_vars:
            raise LoweringError(
                f"block `{block.name_hint}` has iterators but no BlockRealize binding them",
                rule="convert_blocks_to_opaque.unbound-iterators",
                hint="wrap the block in a BlockRealize that gives each iterator a value",
            )
        return self.generic_visit(block)
