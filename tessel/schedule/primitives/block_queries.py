"""Block queries: the child blocks of a loop or block, and a block's producers and consumers.

Producers and consumers follow TVM's block-scope dependencies: among the blocks of the same
scope (the nearest enclosing block), a producer is an earlier block writing a buffer this block
reads, a consumer a later block reading a buffer this block writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.state import find_block_realize, walk_with_ancestors
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def child_block_realizes(root: Node) -> list[BlockRealize]:
    """The BlockRealizes under `root` with no other block between them and `root`, in order."""
    found = []
    for node, ancestors in walk_with_ancestors(root):
        if isinstance(node, BlockRealize) and not any(isinstance(a, Block) for a in ancestors):
            found.append(node)
    return found


def mentions_var(node: Node, var: object) -> bool:
    """Whether `var` (by identity) occurs in `node`."""
    return any(n is var for n in post_order(node))


def get_child_blocks(sch: Schedule, target: BlockRV | LoopRV) -> list[BlockRV]:
    """The blocks directly under a loop or a block (not nested deeper), in program order."""
    if isinstance(target, LoopRV):
        root: Node = sch.loop(target, "get_child_blocks").body
    else:
        block = sch.block(target, "get_child_blocks").block
        root = block.body
    return [BlockRV(r.block.name_hint) for r in child_block_realizes(root)]


def _siblings(sch: Schedule, primitive: str, rv: BlockRV) -> tuple[list[Block], int]:
    """The blocks of `rv`'s scope in program order, and the position of `rv`'s block."""
    sch.block(rv, primitive)  # a stale handle, or a block inside an init: refused
    located = find_block_realize(sch.func, rv.name)
    assert located is not None
    scope = located.parent_block()
    if scope is None:
        raise ScheduleError(
            primitive,
            "root-block",
            f"block `{rv.name}` is the root block; it has no scope of its own",
            func=sch.func,
        )
    blocks = [r.block for r in child_block_realizes(scope.body)]
    position = next(k for k, b in enumerate(blocks) if b.name_hint == rv.name)
    return blocks, position


def _buffers(regions: tuple) -> set[Buffer]:
    return {region.buffer for region in regions}


def get_producers(sch: Schedule, rv: BlockRV) -> list[BlockRV]:
    """Earlier blocks of the same scope that write a buffer `rv` reads."""
    blocks, position = _siblings(sch, "get_producers", rv)
    reads = _buffers(blocks[position].reads)
    return [BlockRV(b.name_hint) for b in blocks[:position] if _buffers(b.writes) & reads]


def get_consumers(sch: Schedule, rv: BlockRV) -> list[BlockRV]:
    """Later blocks of the same scope that read a buffer `rv` writes."""
    blocks, position = _siblings(sch, "get_consumers", rv)
    writes = _buffers(blocks[position].writes)
    return [BlockRV(b.name_hint) for b in blocks[position + 1 :] if _buffers(b.reads) & writes]
