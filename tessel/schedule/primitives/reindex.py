"""reindex: stage one buffer access of a block through a buffer indexed by the block's iterators.

TVM's ReIndex: the new buffer `<buffer>_reindex` has one dimension per block iterator that the
access uses (in the block's iterator order), so its layout follows the iteration space; a copy
block `<buffer>_reindex` goes right before the block's loop nest (a read) or right after it
(a write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.state import find_block_realize, replace_in, replace_stmt
from tessel.tir.analysis.interval import expr_equal
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def reindex(sch: Schedule, rv: BlockRV, buffer_index: Any) -> tuple[PrimFunc, str]:
    """The function with the access to `buffer_index` (`("read"|"write", n)`) of `rv` staged
    through a reindexed buffer; and the copy block's name."""
    realize, scope_block = S.block_and_scope(sch, "reindex", rv)
    kind, index = _parse_index(sch, realize.block, buffer_index)
    buffer = S.nth_buffer(sch, "reindex", realize.block, kind, index)
    indices = _the_access(sch, realize.block, buffer)
    covered = [iv for iv in realize.block.iter_vars if any(_mentions(i, iv.var) for i in indices)]
    name = f"{buffer.name}_reindex"
    block_name = S.fresh_block_name(sch.func, name)
    shape = tuple(iv.dom.extent for iv in covered)
    fresh = S.cache_buffer(buffer, S.fresh_buffer_name(sch.func, name), buffer.scope)
    new = with_changes(fresh, shape=shape)
    new_indices = tuple(builders.sub(iv.var, iv.dom.min) for iv in covered)
    rewritten = _Reindexer(buffer, new, new_indices).visit(realize)
    stage = _copy_block(block_name, realize.block, covered, buffer, indices, new, kind)
    anchor = _nest_top(sch, rv)
    where = S.Insertion(anchor[1], anchor[0], after=kind == "write")
    new_scope = S.insert(scope_block, where, stage)
    new_scope = replace_in(new_scope, realize, rewritten)
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, new)), block_name


def _parse_index(sch: Schedule, block: Block, buffer_index: Any) -> tuple[str, int]:
    if (isinstance(buffer_index, tuple | list) and len(buffer_index) == 2
            and buffer_index[0] in ("read", "write")):  # fmt: skip
        return buffer_index[0], buffer_index[1]
    raise ScheduleError("reindex", "buffer-index",
                        f"expects (\"read\" | \"write\", index), got {buffer_index!r}",
                        func=sch.func, culprits=(block,))  # fmt: skip


def _the_access(sch: Schedule, block: Block, buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The one index tuple with which `block` accesses `buffer` (all accesses must agree)."""
    roots = [block.body] if block.init is None else [block.init, block.body]
    accesses = [n.indices for root in roots for n in post_order(root)
                if isinstance(n, BufferLoad | BufferStore) and n.buffer is buffer]  # fmt: skip
    distinct: list[tuple[PrimExpr, ...]] = []
    for access in accesses:
        if not any(expr_equal(access, d) for d in distinct):
            distinct.append(access)
    if len(distinct) != 1:
        raise ScheduleError("reindex", "single-access-pattern",
                            f"block `{block.name_hint}` accesses `{buffer.name}` with "
                            f"{len(distinct)} different index tuples; reindex needs exactly one",
                            func=sch.func, culprits=(block,))  # fmt: skip
    iters = {iv.var for iv in block.iter_vars}
    used = [n for i in distinct[0] for n in post_order(i) if isinstance(n, Var)]
    stray = {n.name for n in used if n not in iters}
    if stray:
        raise ScheduleError("reindex", "block-iterators-only",
                            f"the indices of `{buffer.name}` use {sorted(stray)}, which are not "
                            f"iterators of block `{block.name_hint}`",
                            func=sch.func, culprits=(block,))  # fmt: skip
    return distinct[0]


def _mentions(expr: PrimExpr, var: Var) -> bool:
    return any(n is var for n in post_order(expr))


class _Reindexer(Mutator):
    """Accesses and regions of `old` become `new[new_indices]` (one point per iteration)."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        super().__init__()
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, node: BufferLoad) -> Node:
        node = self.generic_visit(node)  # type: ignore[assignment]  (a load stays a load)
        if node.buffer is not self.old:
            return node
        return with_changes(node, buffer=self.new, indices=self.indices)

    def visit_BufferStore(self, node: BufferStore) -> Node:
        node = self.generic_visit(node)  # type: ignore[assignment]  (a store stays a store)
        if node.buffer is not self.old:
            return node
        return with_changes(node, buffer=self.new, indices=self.indices)

    def visit_BufferRegion(self, node: BufferRegion) -> Node:
        if node.buffer is not self.old:
            return node
        return S.point_region(self.new, self.indices)


def _copy_block(name: str, block: Block, covered: list[IterVar], buffer: Buffer,
                indices: tuple[PrimExpr, ...], new: Buffer, kind: str) -> Stmt:  # fmt: skip
    """Loops `ax<k>` over the covered iterators around the block moving data between the
    buffer and its reindexed copy (k is the iterator's position in the original block)."""
    position = {iv.var: k for k, iv in enumerate(block.iter_vars)}
    fresh = [IterVar(iv.dom, Var(f"v{position[iv.var]}", iv.var.dtype), IterVarType.DATA_PAR)
             for iv in covered]
    rename = {iv.var: f.var for iv, f in zip(covered, fresh, strict=True)}
    old_at = tuple(substitute(i, rename) for i in indices)
    new_at = tuple(builders.sub(f.var, f.dom.min) for f in fresh)
    src, dst = (buffer, old_at), (new, new_at)
    if kind == "write":
        src, dst = dst, src
    body = BufferStore(dst[0], BufferLoad(*src), dst[1])
    copy = Block(tuple(fresh), (S.point_region(*src),), (S.point_region(*dst),), name, body)
    loops = [Var(f"ax{position[iv.var]}", iv.var.dtype) for iv in covered]
    values = tuple(builders.add(f.dom.min, v) for f, v in zip(fresh, loops, strict=True))
    stmt: Stmt = BlockRealize(values, builders.const(True, "bool"), copy)
    for var, f in reversed(list(zip(loops, fresh, strict=True))):
        stmt = For(var, builders.const(0, var.dtype), f.dom.extent, ForKind.SERIAL, stmt)
    return stmt


def _nest_top(sch: Schedule, rv: BlockRV) -> tuple[Stmt, Node]:
    """The outermost loop that holds only this block (or the block itself), and its parent."""
    located = find_block_realize(sch.func, rv.name)
    assert located is not None  # block_and_scope found it
    node: Stmt = located.node
    ancestors = list(located.ancestors)
    while isinstance(ancestors[-1], For) and ancestors[-1].body is node:
        node = ancestors.pop()  # type: ignore[assignment]  (a For is a statement)
    return node, ancestors[-1]

