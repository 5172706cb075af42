"""Finding the blocks left in a function (lowering passes require and promise none)."""

from __future__ import annotations

from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.tir.block import Block, BlockRealize


def first_block(root: Node) -> Block | None:
    """A block under `root` (the innermost first, in post order), or None if there is none."""
    for node in post_order(root):
        if isinstance(node, Block):
            return node
        if isinstance(node, BlockRealize):
            return node.block
    return None
