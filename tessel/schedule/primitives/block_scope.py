"""A block's scope as compute_at and the inliners see it: sibling blocks, producers and
consumers by buffer, output buffers, and removing a leaf block with the loops that only hold it."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.node import with_changes
from tessel.schedule.errors import ScheduleError
from tessel.schedule.state import Located, replace_stmt, walk_with_ancestors
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, SeqStmt, Stmt


@dataclass(frozen=True)
class Scope:
    """The blocks directly under one scope root (the nearest enclosing block, or the function)."""

    root: Stmt
    children: tuple[Located, ...]  # child BlockRealizes, ancestors relative to the function body

    def writers(self, buffer: Buffer) -> list[BlockRealize]:
        """The child blocks that declare a write of `buffer`."""
        return [c.node for c in self.children if _touches(c.node.block.writes, buffer)]  # type: ignore[attr-defined]  # children are BlockRealizes

    def readers(self, buffer: Buffer) -> list[BlockRealize]:
        """The child blocks that declare a read of `buffer`."""
        return [c.node for c in self.children if _touches(c.node.block.reads, buffer)]  # type: ignore[attr-defined]  # children are BlockRealizes

    def producers(self, realize: BlockRealize) -> list[BlockRealize]:
        """Other child blocks writing a buffer that `realize` reads."""
        found = [w for r in realize.block.reads for w in self.writers(r.buffer)]
        return _unique([b for b in found if b is not realize])

    def consumers(self, realize: BlockRealize) -> list[BlockRealize]:
        """Other child blocks reading a buffer that `realize` writes."""
        found = [c for w in realize.block.writes for c in self.readers(w.buffer)]
        return _unique([b for b in found if b is not realize])


def _touches(regions: tuple, buffer: Buffer) -> bool:
    return any(r.buffer is buffer for r in regions)


def _unique(blocks: list[BlockRealize]) -> list[BlockRealize]:
    seen: dict[int, BlockRealize] = {}
    for block in blocks:
        seen.setdefault(id(block), block)
    return list(seen.values())


def scope_of(func: PrimFunc, located: Located) -> Scope:
    """The scope `located` (a block realize or a loop) lives in."""
    root_block = located.parent_block()
    children = []
    for node, ancestors in walk_with_ancestors(func.body):
        if isinstance(node, BlockRealize):
            child = Located(node, ancestors)
            if child.parent_block() is root_block:
                children.append(child)
    return Scope(func.body if root_block is None else root_block, tuple(children))


def is_output_buffer(func: PrimFunc, buffer: Buffer) -> bool:
    """True if `buffer` is a function parameter's buffer (what the caller sees)."""
    return any(b is buffer for b in func.buffer_map.values())


def is_complete(realize: BlockRealize, scope: Scope) -> bool:
    """Data-parallel only, no init, sole writer of what it writes, reads none of it (TVM's
    complete block: its instances are independent and it alone defines its outputs)."""
    block = realize.block
    if block.init is not None or any(
        iv.iter_type is not IterVarType.DATA_PAR for iv in block.iter_vars
    ):
        return False
    return _sole_writer(realize, scope) and not any(
        _touches(block.reads, w.buffer) for w in block.writes
    )


def is_reduction(realize: BlockRealize, scope: Scope) -> bool:
    """Spatial and reduction iterators only, with an init, and sole writer of its outputs."""
    block = realize.block
    kinds = {iv.iter_type for iv in block.iter_vars}
    if block.init is None or not kinds <= {IterVarType.DATA_PAR, IterVarType.COMM_REDUCE}:
        return False
    return _sole_writer(realize, scope)


def _sole_writer(realize: BlockRealize, scope: Scope) -> bool:
    return all(scope.writers(w.buffer) == [realize] for w in realize.block.writes)


def removable_subtree(primitive: str, func: PrimFunc, located: Located) -> Stmt:
    """The outermost statement that holds only this block: the block's realize and the loops
    whose body is nothing else (TVM's LeafBlockRemovalPlan). It must sit in a sequence."""
    target: Stmt = located.node
    for ancestor in reversed(located.ancestors):
        if isinstance(ancestor, For) and ancestor.body is target:
            target = ancestor
            continue
        if isinstance(ancestor, SeqStmt):
            return target
        break
    block = located.node.block  # type: ignore[attr-defined]  # located a BlockRealize
    raise ScheduleError(
        primitive,
        "only-leaf",
        f"block `{block.name_hint}` is the only statement of its scope; removing "
        "it would leave the scope empty",
        func=func,
        culprits=(block,),
    )


def remove_stmt(func: PrimFunc, target: Stmt) -> PrimFunc:
    """`func` without `target`, which is an item of a SeqStmt (found by identity)."""
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, SeqStmt) and any(s is target for s in node.seq):
            rest = SeqStmt.flatten([s for s in node.seq if s is not target])
            return _replace(func, node, rest)
    raise AssertionError("remove_stmt: the statement is not an item of a sequence")


def allocating_block(func: PrimFunc, buffer: Buffer) -> Block | None:
    """The block whose alloc_buffers hold `buffer`, or None (a parameter)."""
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, Block) and any(b is buffer for b in node.alloc_buffers):
            return node
    return None


def drop_alloc(func: PrimFunc, buffer: Buffer) -> PrimFunc:
    """`func` without the alloc_buffer of `buffer` (in whichever block allocates it)."""
    node = allocating_block(func, buffer)
    if node is None:
        return func
    kept = tuple(b for b in node.alloc_buffers if b is not buffer)
    return _replace(func, node, with_changes(node, alloc_buffers=kept))


def _replace(func: PrimFunc, old: Stmt, new: Stmt) -> PrimFunc:
    return replace_stmt(func, old, new)


def body_items(stmt: Stmt) -> list[Stmt]:
    """The statements of a loop body: a sequence's items, or the one statement."""
    return list(stmt.seq) if isinstance(stmt, SeqStmt) else [stmt]
