"""reindex: stage one buffer access of a block through a buffer indexed by the block's iterators.

TVM's ReIndex: the new buffer `<buffer>_reindex` has one dimension per block iterator that the
access uses (in the block's iterator order), so its layout follows the iteration space; a copy
block `<buffer>_reindex` goes in the scope right before the block's loop nest (a read) or right
after it (a write), over the whole domain of those iterators.

As in TVM, the loops from the block up to the scope must form a chain (only the innermost may
hold other statements). Tessel also refuses what TVM would get wrong: another block in that
nest accessing the buffer (it would run before the copy back, or after the copy in), a write
whose old value the block reads without an init, a read of a buffer the block also writes. A
copy whose indices may leave the buffer (a guarded read in a padding block) runs under
`T.where` the indices are in bounds: the block only reads those points (fuzz seed 0, 679).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.state import (
    find_block_realize,
    replace_in,
    replace_stmt,
    walk_with_ancestors,
)
from tessel.tir.analysis.interval import expr_equal
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def reindex(sch: Schedule, rv: BlockRV, buffer_index: Any) -> tuple[PrimFunc, str]:
    """The function with the access to `buffer_index` (`("read"|"write", n)`) of `rv` staged
    through a reindexed buffer; and the copy block's name."""
    realize, scope_block = S.block_and_scope(sch, "reindex", rv)
    kind, index = _parse_index(sch, realize.block, buffer_index)
    buffer = S.nth_buffer(sch, "reindex", realize.block, kind, index)
    indices = _the_access(sch, realize.block, buffer)
    _check_own_accesses(sch, realize.block, buffer, kind)
    where = _stage_site(sch, rv, realize, scope_block)
    _check_nest_alone(sch, where.anchor, realize, buffer, kind)
    covered = [iv for iv in realize.block.iter_vars if any(_mentions(i, iv.var) for i in indices)]
    name = f"{buffer.name}_reindex"
    block_name = S.fresh_block_name(sch.func, name)
    shape = tuple(iv.dom.extent for iv in covered)
    fresh = S.cache_buffer(buffer, S.fresh_buffer_name(sch.func, name), buffer.scope)
    new = with_changes(fresh, shape=shape)
    new_indices = tuple(builders.sub(iv.var, iv.dom.min) for iv in covered)
    rewritten = Reindexer(buffer, new, new_indices).visit(realize)
    # Copied only where written: a write where the block writes (its `T.where` may skip points:
    # fuzz campaign 10, case 17112), a read where the buffer's one writer in the scope does (a
    # layout's padding: case 6286), since the copy reads every point, the block only some.
    source = realize if kind == "write" else _writer(scope_block, realize, buffer)
    skip = _unwritten(source, buffer)
    stage = _copy_block(block_name, realize.block, covered, buffer, indices, new, kind, skip)
    where = S.Insertion(where.parent, where.anchor, after=kind == "write")
    new_scope = S.insert(scope_block, where, stage)
    new_scope = replace_in(new_scope, realize, rewritten)
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, new)), block_name


def _writer(scope: Block, reader: BlockRealize, buffer: Buffer) -> BlockRealize | None:
    """The one block of the scope that writes `buffer`, when it runs before `reader` (what the
    reader sees is then what it wrote); None otherwise."""
    kids = S.children(scope)
    writers = [k for k, kid in enumerate(kids) if kid.writes(buffer)]
    position = next(k for k, kid in enumerate(kids) if kid.realize is reader)
    if len(writers) != 1 or writers[0] >= position:
        return None
    return kids[writers[0]].realize


def _unwritten(
    realize: BlockRealize | None, buffer: Buffer
) -> tuple[tuple[Var, ...], PrimExpr] | None:
    return None if realize is None else S.unwritten(realize, buffer)


def _parse_index(sch: Schedule, block: Block, buffer_index: Any) -> tuple[str, int]:
    if (
        isinstance(buffer_index, tuple | list)
        and len(buffer_index) == 2
        and buffer_index[0] in ("read", "write")
    ):
        return buffer_index[0], buffer_index[1]
    raise ScheduleError(
        "reindex",
        "buffer-index",
        f'expects ("read" | "write", index), got {buffer_index!r}',
        func=sch.func,
        culprits=(block,),
    )


def _the_access(sch: Schedule, block: Block, buffer: Buffer) -> tuple[PrimExpr, ...]:
    """The one index tuple with which `block` accesses `buffer` (all accesses must agree)."""
    roots = [block.body] if block.init is None else [block.init, block.body]
    accesses = [
        n.indices
        for root in roots
        for n in post_order(root)
        if isinstance(n, BufferLoad | BufferStore) and n.buffer is buffer
    ]
    distinct: list[tuple[PrimExpr, ...]] = []
    for access in accesses:
        if not any(expr_equal(access, d) for d in distinct):
            distinct.append(access)
    if len(distinct) != 1:
        raise ScheduleError(
            "reindex",
            "single-access-pattern",
            f"block `{block.name_hint}` accesses `{buffer.name}` with "
            f"{len(distinct)} different index tuples; reindex needs exactly one",
            func=sch.func,
            culprits=(block,),
        )
    iters = {iv.var for iv in block.iter_vars}
    used = [n for i in distinct[0] for n in post_order(i) if isinstance(n, Var)]
    stray = {n.name for n in used if n not in iters}
    if stray:
        raise ScheduleError(
            "reindex",
            "block-iterators-only",
            f"the indices of `{buffer.name}` use {sorted(stray)}, which are not "
            f"iterators of block `{block.name_hint}`",
            func=sch.func,
            culprits=(block,),
        )
    return distinct[0]


def _mentions(expr: PrimExpr, var: Var) -> bool:
    return any(n is var for n in post_order(expr))


class Reindexer(Mutator):
    """Accesses and regions of `old` become `new[new_indices]` (one point per iteration)."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        super().__init__()
        self.old, self.new, self.indices = old, new, indices

    def visit_BufferLoad(self, node: BufferLoad) -> Node:
        node = self.generic_visit(node)  # type: ignore[assignment]  # a load stays a load
        if node.buffer is not self.old:
            return node
        return with_changes(node, buffer=self.new, indices=self.indices)

    def visit_BufferStore(self, node: BufferStore) -> Node:
        node = self.generic_visit(node)  # type: ignore[assignment]  # a store stays a store
        if node.buffer is not self.old:
            return node
        return with_changes(node, buffer=self.new, indices=self.indices)

    def visit_BufferRegion(self, node: BufferRegion) -> Node:
        if node.buffer is not self.old:
            return node
        return S.point_region(self.new, self.indices)


def _copy_block(
    name: str,
    block: Block,
    covered: list[IterVar],
    buffer: Buffer,
    indices: tuple[PrimExpr, ...],
    new: Buffer,
    kind: str,
    skip: tuple[tuple[Var, ...], PrimExpr] | None = None,
) -> Stmt:
    """Loops `ax<k>` over the covered iterators around the block moving data between the
    buffer and its reindexed copy (k is the iterator's position in the original block), except
    at the buffer points `skip` names (over its index variables)."""
    position = {iv.var: k for k, iv in enumerate(block.iter_vars)}
    fresh = [
        IterVar(iv.dom, Var(f"v{position[iv.var]}", iv.var.dtype), IterVarType.DATA_PAR)
        for iv in covered
    ]
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
    inside = S.in_bounds(buffer, old_at, {f.var: f.dom for f in fresh})
    if skip is not None:
        names, skipped = skip
        written = builders.logical_not(substitute(skipped, dict(zip(names, old_at, strict=True))))
        inside = builders.conjunction([inside, written])
    predicate = substitute(inside, {f.var: v for f, v in zip(fresh, values, strict=True)})
    analyzer = Analyzer()
    for var, f in zip(loops, fresh, strict=True):
        analyzer.bind(var, Range(builders.const(0, var.dtype), f.dom.extent))
    predicate = analyzer.simplify(predicate)
    stmt: Stmt = BlockRealize(values, predicate, copy)
    for var, f in reversed(list(zip(loops, fresh, strict=True))):
        stmt = For(var, builders.const(0, var.dtype), f.dom.extent, ForKind.SERIAL, stmt)
    return stmt


def _check_own_accesses(sch: Schedule, block: Block, buffer: Buffer, kind: str) -> None:
    """A read stage cannot carry the block's own stores back; a write stage cannot bring in the
    old value an update without init reads (after decompose_reduction, fuzz seed 0, 1122)."""
    body = list(post_order(block.body))
    stores = any(isinstance(n, BufferStore) and n.buffer is buffer for n in body)
    loads = any(isinstance(n, BufferLoad) and n.buffer is buffer for n in body)
    in_init = block.init is not None and _mentions_buffer(block.init, buffer)
    if kind == "read" and (stores or in_init):
        raise ScheduleError(
            "reindex",
            "reads-own-output",
            f"block `{block.name_hint}` writes `{buffer.name}` as well as reading "
            "it; a read stage would drop those writes",
            func=sch.func,
            culprits=(block,),
            hint="reindex the block's write of the buffer instead",
        )
    if kind == "write" and loads and block.init is None:
        raise ScheduleError(
            "reindex",
            "reads-old-value",
            f"block `{block.name_hint}` reads the old value of `{buffer.name}`, "
            "which another block (or the caller) wrote; a write stage would not "
            "bring it in",
            func=sch.func,
            culprits=(block,),
        )


def _mentions_buffer(stmt: Stmt, buffer: Buffer) -> bool:
    accesses = (n for n in post_order(stmt) if isinstance(n, BufferLoad | BufferStore))
    return any(n.buffer is buffer for n in accesses)


def _stage_site(sch: Schedule, rv: BlockRV, realize: BlockRealize, scope: Block) -> S.Insertion:
    """The block's outermost loop in the scope (or the block itself) and its parent; the loops
    from the block up must form a chain, only the innermost holding other statements (TVM)."""
    located = find_block_realize(sch.func, rv.name)
    assert located is not None  # block_and_scope found it
    ancestors = list(located.ancestors)
    path = [*ancestors[ancestors.index(scope) + 1 :], realize]
    parent: Node = scope
    if isinstance(path[0], SeqStmt) and path[0] is scope.body:
        parent = path.pop(0)
    chained = all(
        isinstance(outer, For) and outer.body is inner
        for outer, inner in zip(path[:-2], path[1:-1], strict=True)
    )
    innermost = path[-2] if len(path) > 1 else None
    if chained and (innermost is None or isinstance(innermost, For | SeqStmt)):
        return S.Insertion(parent, path[0])  # type: ignore[arg-type]  # a statement
    raise ScheduleError(
        "reindex",
        "loop-chain",
        f"the loops around block `{rv.name}` are not a chain up to its scope: "
        "some outer loop holds other statements too",
        func=sch.func,
        culprits=(realize.block,),
    )


def _check_nest_alone(
    sch: Schedule, top: Stmt, realize: BlockRealize, buffer: Buffer, kind: str
) -> None:
    """No other block in the nest may write the buffer (nor read it, for a write stage): the
    copy runs once, before or after the whole nest (fuzz seed 0, 1626)."""
    for node, _ in walk_with_ancestors(top):
        if not isinstance(node, BlockRealize) or node is realize:
            continue
        regions = node.block.writes + (node.block.reads if kind == "write" else ())
        if any(r.buffer is buffer for r in regions):
            raise ScheduleError(
                "reindex",
                "shared-nest",
                f"block `{node.block.name_hint}` shares loops with "
                f"`{realize.block.name_hint}` and accesses `{buffer.name}`; the "
                f"{kind} stage, outside those loops, would run at the wrong time",
                func=sch.func,
                culprits=(realize.block, node.block),
            )
