"""What the cache primitives share: the block's scope, its child blocks, relaxed regions, copy
stages, inserting a statement, replacing a buffer, fresh names.

A *copy stage* is TVM's cache stage: loops `ax0, ax1, ...` over a region and one block whose
iterators `v0, v1, ...` range over the whole buffer, copying one element (`dst[v] = src[v]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tessel.arith import Analyzer, presburger
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.type import PointerType
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.block_binding import loop_binding
from tessel.schedule.state import block_names, find_block_realize, replace_in, walk_with_ancestors
from tessel.support.dtype import handle
from tessel.tir.analysis.interval import expr_equal
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

# TVM's storage ranks (runtime::StorageScope); a tag may follow a dot: `shared.dyn`, `global.stack`.
_SCOPE_RANKS = ("global", "shared", "warp", "local", "wmma")


@dataclass(frozen=True)
class Child:
    """A block directly in the scope (no block between), with its ancestors from the scope block."""

    realize: BlockRealize
    ancestors: tuple[Node, ...]

    @property
    def chain(self) -> tuple[Node, ...]:
        return (*self.ancestors, self.realize)

    def loops(self) -> list[For]:
        return [a for a in self.ancestors if isinstance(a, For)]

    def writes(self, buffer: Buffer) -> bool:
        return any(r.buffer is buffer for r in self.realize.block.writes)

    def reads(self, buffer: Buffer) -> bool:
        return any(r.buffer is buffer for r in self.realize.block.reads)


@dataclass(frozen=True)
class Insertion:
    """Put a statement right before (or after) `anchor`, whose parent is `parent`."""

    parent: Node
    anchor: Stmt
    after: bool = False


# -- checks ------------------------------------------------------------------------------------


def check_scope_name(sch: Schedule, primitive: str, scope: object, culprit: Node) -> str:
    """`scope` is a storage scope TVM knows (`global`, `shared`, `local`, `shared.dyn`, ...)."""
    rank = scope.split(".", 1)[0] if isinstance(scope, str) else None
    if rank in _SCOPE_RANKS:
        return scope  # type: ignore[return-value]  # checked to be a str above
    raise ScheduleError(
        primitive,
        "storage-scope",
        f"`{scope}` is not a storage scope; use one of {list(_SCOPE_RANKS)}, "
        "optionally with a tag (`shared.dyn`, `global.stack`)",
        func=sch.func,
        culprits=(culprit,),
    )


def nth_buffer(sch: Schedule, primitive: str, block: Block, kind: str, index: object) -> Buffer:
    """The buffer of `block.reads[index]` (kind "read") or `block.writes[index]` ("write")."""
    regions = block.reads if kind == "read" else block.writes
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(regions):
        return regions[index].buffer
    names = [r.buffer.name for r in regions]
    raise ScheduleError(
        primitive,
        "buffer-index",
        f"{kind} buffer index {index!r} is out of range: block `{block.name_hint}` "
        f"{kind}s {len(regions)} buffers {names}",
        func=sch.func,
        culprits=(block,),
    )


def block_and_scope(sch: Schedule, primitive: str, rv: BlockRV) -> tuple[BlockRealize, Block]:
    """The block's BlockRealize and its scope (the nearest enclosing block)."""
    realize = sch.block(rv, primitive)
    located = find_block_realize(sch.func, rv.name)
    scope = located.parent_block() if located is not None else None
    if scope is None:
        raise ScheduleError(
            primitive,
            "root-block",
            f"block `{rv.name}` is the root block; it has no scope to cache in",
            func=sch.func,
            culprits=(realize.block,),
        )
    return realize, scope


def is_allocated(func: PrimFunc, buffer: Buffer) -> bool:
    """`buffer` is in some block's alloc_buffers (not a parameter or a match_buffer)."""
    blocks = (n for n, _ in walk_with_ancestors(func.body) if isinstance(n, Block))
    return any(buffer in block.alloc_buffers for block in blocks)


# -- the scope's blocks ------------------------------------------------------------------------


def children(scope: Block) -> list[Child]:
    """The blocks directly in `scope`'s body, in program order (a blockized reduction's init
    block runs before the body's blocks, as part of the scope block's own init)."""
    found = []
    for node, ancestors in walk_with_ancestors(scope):
        in_init = scope.init is not None and (node is scope.init or scope.init in ancestors)
        if in_init:
            continue
        if isinstance(node, BlockRealize) and not any(isinstance(a, Block) for a in ancestors[1:]):
            found.append(Child(node, ancestors))
    return found


def child_named(kids: Sequence[Child], realize: BlockRealize) -> Child:
    return next(c for c in kids if c.realize is realize)


def between(writer: Child, consumer: Child) -> Insertion:
    """Right before the consumer's subtree, in the lowest sequence holding both blocks."""
    a, b = writer.chain, consumer.chain
    k = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x is not y)
    return Insertion(a[k - 1], b[k])


def split_loops(child: Child, insertion: Insertion) -> tuple[list[For], list[For]]:
    """(loops around `child` under the insertion point, which the copy relaxes; loops above it,
    which enclose the copy too)."""
    chain = child.chain
    start = chain.index(insertion.parent) + 1
    below = [n for n in chain[start:] if isinstance(n, For)]
    above = [n for n in chain[:start] if isinstance(n, For)]
    return below, above


# -- regions -----------------------------------------------------------------------------------


def relaxed_region(
    region: BufferRegion, realize: BlockRealize, relaxed: Sequence[For], fixed: Sequence[For]
) -> tuple[Range, ...]:
    """`region` (in `realize`'s iterators) over all iterations of the `relaxed` loops, clamped to
    the buffer; the `fixed` loops stay symbolic (they enclose the copy)."""
    analyzer = Analyzer()
    for loop in fixed:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    domain = {loop.loop_var: Range(loop.min, loop.extent) for loop in relaxed}
    block = realize.block
    binding = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values, strict=True)}
    ranges = []
    for rng, extent in zip(region.region, region.buffer.shape, strict=True):
        rng = substitute(rng, binding)
        last = builders.add(rng.min, builders.sub(rng.extent, 1))
        lo = analyzer.int_set(rng.min, domain).min_value
        hi = analyzer.int_set(last, domain).max_value
        lo = builders.const(0, extent.dtype) if lo is None else builders.max_value(lo, 0)
        top = builders.sub(extent, 1)
        hi = top if hi is None else builders.min_value(hi, top)
        lo = analyzer.simplify(lo)
        ranges.append(Range(lo, analyzer.simplify(builders.add(builders.sub(hi, lo), 1))))
    return tuple(ranges)


# -- building ----------------------------------------------------------------------------------


def cache_buffer(buffer: Buffer, name: str, scope: str) -> Buffer:
    """A fresh compact buffer of `buffer`'s shape and dtype in `scope`."""
    data = Var(name, handle, PointerType(buffer.dtype, scope))
    return Buffer(data, buffer.dtype, buffer.shape, name, axis_separators=buffer.axis_separators)


def unwritten(realize: BlockRealize, buffer: Buffer) -> tuple[tuple[Var, ...], PrimExpr] | None:
    """Over fresh index variables, the points of `buffer` that the block never stores to (the
    padding `transform_layout` leaves unspecified, fuzz seed 0, 72); None when there are none,
    or they cannot be computed exactly."""
    block = realize.block
    roots = [block.body] if block.init is None else [block.init, block.body]
    nodes = [n for root in roots for n in post_order(root)]
    if any(isinstance(n, BlockRealize) for n in nodes):
        return None  # the stores are an inner block's, in its own iterators (after blockize)
    stores = [n.indices for n in nodes if isinstance(n, BufferStore) and n.buffer is buffer]
    iters = {iv.var: iv.dom for iv in block.iter_vars}
    if not stores:
        return None
    if _plain(stores[0], iters):
        return _unguarded(realize, buffer, stores[0])
    if any(not expr_equal(s, stores[0]) for s in stores[1:]):
        return None  # several store patterns: their union is not worth computing
    used = [n for i in stores[0] for n in post_order(i) if isinstance(n, Var)]
    if any(v not in iters for v in used):
        return None  # a loop inside the block: its points are not the iterators' alone
    domain = {v: r for v, r in iters.items() if any(_uses(i, v) for i in stores[0])}
    names = tuple(Var(f"p{k}", e.dtype) for k, e in enumerate(buffer.shape))
    try:
        padding = presburger.padding_predicate(stores[0], domain, buffer.shape, names)
    except presburger.NotPresburger:
        return None
    if builders.is_const_int(padding, 0):
        return None
    return names, padding


def _unguarded(
    realize: BlockRealize, buffer: Buffer, indices: Sequence[PrimExpr]
) -> tuple[tuple[Var, ...], PrimExpr] | None:
    """For a store at plain iterators: the points the block's `T.where` leaves unwritten (a
    reindex copy that skips what it would read out of bounds, fuzz seed 0, 1147), when the
    predicate is over loops bound to the iterators alone; None otherwise."""
    predicate = realize.predicate
    if builders.is_const_int(predicate, 1):
        return None
    names = tuple(Var(f"p{k}", e.dtype) for k, e in enumerate(buffer.shape))
    at_index = dict(zip(indices, names, strict=True))
    binding = {
        loop: at_index[var] for loop, var in loop_binding(realize).items() if var in at_index
    }
    used = {n for n in post_order(predicate) if isinstance(n, Var)}
    if not used <= set(binding):
        return None
    return names, builders.logical_not(substitute(predicate, binding))


def _plain(indices: Sequence[PrimExpr], iters: Mapping[Var, Range]) -> bool:
    """Each index is a distinct block iterator: the box of written points is exact."""
    return len({id(i) for i in indices}) == len(indices) and all(i in iters for i in indices)


def _uses(expr: PrimExpr, var: Var) -> bool:
    return any(n is var for n in post_order(expr))


def copy_stage(
    name: str,
    region: Sequence[Range],
    src: Buffer,
    dst: Buffer,
    skip: tuple[tuple[Var, ...], PrimExpr] | None = None,
    known: Mapping[Var, Range] | None = None,
) -> Stmt:
    """Loops over `region` around a block copying `src` into `dst` element by element, except
    where `skip` (a condition over index variables) holds. With `known` (the domains of the
    variables `region` mentions), the copy also skips the points outside the buffer that the
    region may reach (an unclipped declared region, fuzz seed 1, 927)."""
    loop_vars = [Var(f"ax{k}", r.extent.dtype) for k, r in enumerate(region)]
    iter_vars = tuple(
        IterVar(Range(builders.const(0, e.dtype), e), Var(f"v{k}", e.dtype), IterVarType.DATA_PAR)
        for k, e in enumerate(src.shape)
    )
    indices = tuple(iv.var for iv in iter_vars)
    body = BufferStore(dst, BufferLoad(src, indices), indices)
    reads, writes = (point_region(src, indices),), (point_region(dst, indices),)
    block = Block(iter_vars, reads, writes, name, body)
    values = tuple(builders.add(r.min, v) for r, v in zip(region, loop_vars, strict=True))
    predicate = builders.const(True, "bool")
    if skip is not None:
        names, condition = skip
        at = dict(zip(names, values, strict=True))
        predicate = builders.logical_not(substitute(condition, at))
    if known is not None:
        domains = dict(known)
        for var, rng in zip(loop_vars, region, strict=True):
            domains[var] = Range(builders.const(0, var.dtype), rng.extent)
        predicate = builders.logical_and(predicate, in_bounds(src, values, domains))
    stmt: Stmt = BlockRealize(values, predicate, block)
    for var, rng in reversed(list(zip(loop_vars, region, strict=True))):
        stmt = For(var, builders.const(0, var.dtype), rng.extent, ForKind.SERIAL, stmt)
    return stmt


def in_bounds(
    buffer: Buffer, indices: Sequence[PrimExpr], domains: Mapping[Var, Range]
) -> PrimExpr:
    """The conditions `0 <= index < extent` that cannot be proved over `domains` (true when
    `indices` surely lie in `buffer`): a copy's guard (fuzz seed 0, 679; seed 1, 927)."""
    analyzer = Analyzer()
    for var, rng in domains.items():
        analyzer.bind(var, rng)
    conditions = []
    for index, extent in zip(indices, buffer.shape, strict=True):
        for condition in (
            builders.le(builders.const(0, index.dtype), index),
            builders.lt(index, extent),
        ):
            if not analyzer.can_prove(condition):
                conditions.append(condition)
    return builders.conjunction(conditions)


def point_region(buffer: Buffer, indices: Sequence[PrimExpr]) -> BufferRegion:
    return BufferRegion(buffer, tuple(Range(i, builders.const(1, i.dtype)) for i in indices))


def insert(root: Block, where: Insertion, stmt: Stmt) -> Block:
    """`root` with `stmt` placed before/after the anchor (spliced into a parent sequence)."""
    if isinstance(where.parent, SeqStmt):
        items = list(where.parent.seq)
        position = items.index(where.anchor) + where.after
        items.insert(position, stmt)
        return replace_in(root, where.parent, SeqStmt(tuple(items)))
    pair = [where.anchor, stmt] if where.after else [stmt, where.anchor]
    return replace_in(root, where.anchor, SeqStmt.flatten(pair))


def add_alloc(scope: Block, buffer: Buffer) -> Block:
    return with_changes(scope, alloc_buffers=(*scope.alloc_buffers, buffer))


class BufferReplacer(Mutator):
    """Replace buffers (by identity) in every access, region and match_buffer source."""

    def __init__(self, mapping: Mapping[Buffer, Buffer]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Buffer(self, buffer: Buffer) -> Node:
        return self.mapping.get(buffer) or self.visit_memoized(buffer)


def replace_buffer(node: Stmt, old: Buffer, new: Buffer) -> Stmt:
    return BufferReplacer({old: new}).visit(node)  # type: ignore[return-value]  # a statement


# -- names -------------------------------------------------------------------------------------


def fresh_block_name(func: PrimFunc, base: str) -> str:
    """`base`, or `base_1`, `base_2`, ...: block names are unique in a function."""
    return _fresh(set(block_names(func)), base)


def fresh_buffer_name(func: PrimFunc, base: str) -> str:
    """`base`, or `base_1`, ...: not the name of a parameter or allocated buffer."""
    taken = {b.name for b in func.buffer_map.values()}
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, Block):
            taken.update(b.name for b in node.alloc_buffers)
    return _fresh(taken, base)


def scoped_name(buffer: Buffer, scope: str) -> str:
    """TVM's `<buffer>_<scope>`, with the scope's dots as underscores (an identifier)."""
    return f"{buffer.name}_{scope.replace('.', '_')}"


def _fresh(taken: set[str], base: str) -> str:
    if base not in taken:
        return base
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"
