"""Where the padding of a transformed buffer gets its value (docs/architecture.md §5).

- A function input: the caller guarantees it, stated as a buffer constraint, a block
  `buffer_<buffer>_assumption` of `T.assume(not padding or A[...] == pad)` over the new shape.
- A buffer whose one producer writes only it, with loops bound one-to-one to its spatial
  iterators: the producer iterates over the new shape instead and stores
  `T.if_then_else(padding, pad, value)` (in `T.init` too).
- Otherwise: a block `buffer_<buffer>_padding` after the last writer fills the padding, under
  `T.where`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.schedule.primitives.block_binding import in_domains, loop_binding
from tessel.schedule.primitives.block_scope import allocating_block, body_items
from tessel.schedule.primitives.cache_stage import fresh_block_name
from tessel.schedule.primitives.layout import LayoutChange, simplify_indices
from tessel.schedule.state import replace_in, walk_with_ancestors
from tessel.support.errors import UserError
from tessel.tir import builtin
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, Evaluate, For, ForKind, SeqStmt, Stmt

ASSUMPTION_SUFFIX = "_assumption"
_Item = TypeVar("_Item")


def assumption_name(buffer: Buffer) -> str:
    """The name of a padded input's constraint block, as TVM names it."""
    return f"buffer_{buffer.name}{ASSUMPTION_SUFFIX}"


def place_padding(func: PrimFunc, change: LayoutChange) -> PrimFunc:
    """`func` (already rewritten to the new layout) with the padding given its value."""
    if not change.has_padding or change.pad is None:
        return func
    writers = writer_blocks(func, change.new)
    if not writers:
        return add_assumption(func, change)
    reads_buffer = any(isinstance(n, BufferLoad) for n in post_order(change.pad))
    if len(writers) == 1 and not reads_buffer:  # a pad reading the buffer waits for its values
        extended = extend_producer(func, writers[0], change)
        if extended is not None:
            return extended
    return add_padding_block(func, change, writers[-1])


def writer_blocks(func: PrimFunc, buffer: Buffer) -> list[BlockRealize]:
    """The non-root blocks that store into `buffer`, in program order."""
    found = []
    for node, ancestors in walk_with_ancestors(func.body):
        if isinstance(node, BlockRealize) and ancestors:
            roots = (
                [node.block.body] if node.block.init is None else [node.block.init, node.block.body]
            )
            if any(
                isinstance(n, BufferStore) and n.buffer is buffer
                for root in roots
                for n in _own_nodes(root)
            ):
                found.append(node)
    return found


def _own_nodes(stmt: Stmt) -> Iterator[object]:
    """The nodes of `stmt` outside nested blocks (a nested block is its own writer)."""
    for node, ancestors in walk_with_ancestors(stmt):
        if not any(isinstance(a, Block) for a in ancestors):
            yield node


# -- the pieces of a padding statement -------------------------------------------------------


def _grid(shape: Sequence[PrimExpr], names: Sequence[str]) -> tuple[list[Var], list[IterVar]]:
    """Loop variables `ax<k>` and spatial iterators `v_ax<k>` over `shape`."""
    loops = [Var(f"ax{k}", e.dtype) for k, e in enumerate(shape)]
    iters = [
        IterVar(Range(builders.const(0, e.dtype), e), Var(f"v_{n}", e.dtype), IterVarType.DATA_PAR)
        for n, e in zip(names, shape, strict=True)
    ]
    return loops, iters


def _nest(loops: Sequence[Var], shape: Sequence[PrimExpr], body: Stmt) -> Stmt:
    for var, extent in reversed(list(zip(loops, shape, strict=True))):
        body = For(var, builders.const(0, var.dtype), extent, ForKind.SERIAL, body)
    return body


def _over_new_indices(change: LayoutChange, iters: Sequence[IterVar]) -> dict[Var, PrimExpr]:
    return {v: iv.var for v, iv in zip(change.inverse.initial_indices, iters, strict=True)}


def _block(name: str, iters: Sequence[IterVar], body: Stmt) -> Block:
    block = Block(tuple(iters), (), (), name, body)
    reads, writes = infer_access_regions(block)
    return with_changes(block, reads=reads, writes=writes)


def _root(func: PrimFunc) -> Block:
    root = func.body.block if isinstance(func.body, BlockRealize) else None
    assert root is not None, "a schedulable function has a root block"
    return root


def _prepend(func: PrimFunc, stmt: Stmt) -> PrimFunc:
    """`func` with `stmt` first in the root block, after the buffer constraints already there."""
    root = _root(func)
    items = list(root.body.seq) if isinstance(root.body, SeqStmt) else [root.body]
    position = 0
    while position < len(items) and _is_assumption(items[position]):
        position += 1
    items.insert(position, stmt)
    return replace_in_func(func, root, with_changes(root, body=SeqStmt.flatten(items)))


def _is_assumption(stmt: Stmt) -> bool:
    return any(
        isinstance(n, Block) and n.name_hint.endswith(ASSUMPTION_SUFFIX) for n in post_order(stmt)
    )


def replace_in_func(func: PrimFunc, old: Stmt, new: Stmt) -> PrimFunc:
    """`func` with the statement `old` replaced by `new`."""
    return with_changes(func, body=replace_in(func.body, old, new))


# -- inputs: a buffer constraint -------------------------------------------------------------


def add_assumption(func: PrimFunc, change: LayoutChange) -> PrimFunc:
    """`func` with a `buffer_<buffer>_assumption` block stating what the padding of an input
    holds."""
    new, shape = change.new, change.new.shape
    loops, iters = _grid(shape, [f"ax{k}" for k in range(len(shape))])
    to_new = _over_new_indices(change, iters)
    here = tuple(iv.var for iv in iters)
    holds = builders.logical_or(
        builders.logical_not(substitute(change.padding, to_new)),
        builders.eq(BufferLoad(new, here), substitute(change.pad, to_new)),
    )
    name = fresh_block_name(func, assumption_name(new))
    block = _block(name, iters, Evaluate(builtin.assume(holds)))
    realize = BlockRealize(tuple(loops), builders.const(True, "bool"), block)
    return _prepend(func, _nest(loops, shape, realize))


# -- a separate block that fills the padding -------------------------------------------------


def add_padding_block(func: PrimFunc, change: LayoutChange, last_writer: BlockRealize) -> PrimFunc:
    """`func` with a `buffer_<buffer>_padding` block, after the last writer's top-level
    statement."""
    new, shape = change.new, change.new.shape
    loops, iters = _grid(shape, [f"ax{k}" for k in range(len(shape))])
    to_new = _over_new_indices(change, iters)
    here = tuple(iv.var for iv in iters)
    store = BufferStore(new, substitute(change.pad, to_new), here)
    name = fresh_block_name(func, f"buffer_{new.name}_padding")
    predicate = substitute(
        change.padding, dict(zip(change.inverse.initial_indices, loops, strict=True))
    )
    realize = BlockRealize(tuple(loops), predicate, _block(name, iters, store))
    scope = allocating_block(func, new) or _root(func)  # a cache's block, or the root
    items = body_items(scope.body)
    position = next(k for k, s in enumerate(items) if any(n is last_writer for n in post_order(s)))
    items.insert(position + 1, _nest(loops, shape, realize))
    return replace_in_func(func, scope, with_changes(scope, body=SeqStmt.flatten(items)))


# -- extending the producer ------------------------------------------------------------------


def extend_producer(func: PrimFunc, realize: BlockRealize, change: LayoutChange) -> PrimFunc | None:
    """`func` with the producer iterating over the new shape, or None if it does not qualify."""
    if not realize.block.iter_vars:
        return _extend_opaque_producer(func, realize, change)
    plan = _ProducerPlan.of(func, realize, change)
    return None if plan is None else plan.apply(func)


def _extend_opaque_producer(
    func: PrimFunc, realize: BlockRealize, change: LayoutChange
) -> PrimFunc | None:
    """An opaque block (no iterators) storing `A[i, j]` with i, j its loops, each over the old
    extent, in a nest holding nothing else: the loops run over the new shape instead, and the
    store is `T.if_then_else(padding, pad, value)`, as TVM writes it; else None."""
    block = realize.block
    store = _single_store(block.body, change.new)
    if store is None or block.init is not None or len(block.writes) != 1:
        return None
    if not builders.is_const_int(realize.predicate, 1):
        return None
    chain = _loop_chain(func, realize)
    used = {n for i in store.indices for n in post_order(i) if isinstance(n, Var)}
    spatial = [lp for lp in chain if lp.loop_var in used]
    if len(spatial) != len(change.old.shape) or chain[len(chain) - len(spatial) :] != spatial:
        return None  # the indices' loops must be the innermost, in a perfect nest
    if any(not isinstance(lp.body, For | BlockRealize) for lp in spatial):
        return None
    analyzer = Analyzer()
    for loop in chain:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent), allow_override=True)
    order = next(
        (o for o in _orders(spatial) if _stores_old_indices(o, store, change, analyzer)), None
    )
    if order is None:
        return None
    shape = change.new.shape
    loops, _ = _grid(shape, [f"ax{k}" for k in range(len(shape))])
    to_loops = dict(zip(change.inverse.initial_indices, loops, strict=True))
    old_values = {
        lp.loop_var: substitute(e, to_loops)
        for lp, e in zip(order, change.inverse.final_indices, strict=True)
    }
    new_analyzer = Analyzer()
    for var, extent in zip(loops, shape, strict=True):
        new_analyzer.bind(var, Range(builders.const(0, extent.dtype), extent))
    value = simplify_indices(substitute(store.value, old_values), new_analyzer)
    padding = substitute(change.padding, to_loops)
    pad = substitute(change.pad, to_loops)  # type: ignore[type-var]  # not None
    new_store = BufferStore(change.new, builtin.if_then_else(padding, pad, value), tuple(loops))
    new_block = with_changes(block, body=new_store)
    reads, writes = infer_access_regions(new_block)
    new_realize = with_changes(realize, block=with_changes(new_block, reads=reads, writes=writes))
    return replace_in_func(func, spatial[0], _nest(loops, shape, new_realize))


def _stores_old_indices(
    order: list[For], store: BufferStore, change: LayoutChange, analyzer: Analyzer
) -> bool:
    """The store's indices are the map of these loops' variables, each loop over the old
    extent from 0."""
    mapped = change.index_map.map_indices(tuple(lp.loop_var for lp in order))
    return all(
        analyzer.can_prove_equal(a, b) for a, b in zip(mapped, store.indices, strict=True)
    ) and all(
        builders.is_const_int(lp.min, 0) and analyzer.can_prove_equal(lp.extent, e)
        for lp, e in zip(order, change.old.shape, strict=True)
    )


class _ProducerPlan:
    """A producer whose spatial iterators are the old indices and are each bound to one loop."""

    def __init__(
        self,
        realize: BlockRealize,
        change: LayoutChange,
        spatial: list[IterVar],
        loops: list[For],
        chain: list[For],
        kept: list[PrimExpr],
        guards: list[PrimExpr],
    ) -> None:
        self.realize, self.change, self.spatial = realize, change, spatial
        self.loops, self.chain, self.kept, self.guards = loops, chain, kept, guards

    @staticmethod
    def of(func: PrimFunc, realize: BlockRealize, change: LayoutChange) -> _ProducerPlan | None:
        """The plan, when the producer has the shape described in the module doc."""
        block = realize.block
        store = _single_store(block.body, change.new)
        if store is None or len(block.writes) != 1:
            return None
        if block.init is not None and _single_store(block.init, change.new) is None:
            return None
        spatial = _old_index_iters(block, store, change)
        if spatial is None:
            return None
        chain = _loop_chain(func, realize)
        loops = _bound_loops(realize, spatial, chain)
        if loops is None:
            return None
        kept = _kept_conjuncts(realize.predicate, {lp.loop_var for lp in loops})
        if kept is None or _uses_spatial_loops(realize, spatial, loops):
            return None
        guards = _spatial_guards(realize, spatial, loops)
        if guards is None:
            return None
        start = chain.index(min(loops, key=chain.index))
        return _ProducerPlan(realize, change, spatial, loops, chain[start:], kept, guards)

    def apply(self, func: PrimFunc) -> PrimFunc:
        """The function with the rebuilt nest in place of the producer's old one."""
        change, block = self.change, self.realize.block
        shape = change.new.shape
        loops, iters = _grid(shape, [f"ax{k}" for k in range(len(shape))])
        to_new = _over_new_indices(change, iters)
        old_values = {
            iv.var: substitute(e, to_new)
            for iv, e in zip(self.spatial, change.inverse.final_indices, strict=True)
        }
        analyzer = Analyzer()
        for iv in (*iters, *block.iter_vars):
            analyzer.bind(iv.var, iv.dom, allow_override=True)
        here = tuple(iv.var for iv in iters)
        # not None: place_padding returned early
        padding, pad = substitute(change.padding, to_new), substitute(change.pad, to_new)  # type: ignore[type-var]

        def rebuilt(stmt: Stmt) -> Stmt:
            store = _single_store(stmt, change.new)
            assert store is not None
            value = simplify_indices(substitute(store.value, old_values), analyzer, change.new)
            # Guarded even where the value is the pad value (an init of 0 padded with 0), as
            # TVM writes it: `T.if_then_else(padding, 0, 0)`; Simplify folds it when lowering.
            return BufferStore(change.new, builtin.if_then_else(padding, pad, value), here)

        others = [iv for iv in block.iter_vars if iv not in self.spatial]
        new_block = with_changes(
            block,
            iter_vars=(*iters, *others),
            body=rebuilt(block.body),
            init=None if block.init is None else rebuilt(block.init),
        )
        reads, writes = infer_access_regions(new_block)
        new_block = with_changes(new_block, reads=reads, writes=writes)
        values = [
            v
            for iv, v in zip(block.iter_vars, self.realize.iter_values, strict=True)
            if iv in others
        ]
        # A guard stronger than the old domain (a reindex copy skipping what it would read out of
        # bounds, fuzz seed 0, 1293) holds at the old index of each point; the padding is
        # written regardless, as the layout's pad value.
        on_loops = {iv.var: loop for iv, loop in zip(iters, loops, strict=True)}
        guards = [
            substitute(builders.logical_or(padding, substitute(g, old_values)), on_loops)
            for g in self.guards
        ]
        predicate = builders.conjunction([*self.kept, *guards])
        stmt: Stmt = BlockRealize((*loops, *values), predicate, new_block)
        for loop in reversed([lp for lp in self.chain if lp not in self.loops]):
            stmt = with_changes(loop, body=stmt)
        return replace_in_func(func, self.chain[0], _nest(loops, shape, stmt))


def _single_store(stmt: Stmt, buffer: Buffer) -> BufferStore | None:
    return stmt if isinstance(stmt, BufferStore) and stmt.buffer is buffer else None


def _old_index_iters(
    block: Block, store: BufferStore, change: LayoutChange
) -> list[IterVar] | None:
    """The spatial iterators that are the store's old indices (in index order, each over the
    whole old extent), or None."""
    spatial = [iv for iv in block.iter_vars if iv.iter_type is IterVarType.DATA_PAR]
    if len(spatial) != len(change.old.shape):
        return None
    analyzer = Analyzer()
    for iv in block.iter_vars:
        analyzer.bind(iv.var, iv.dom, allow_override=True)
    for order in _orders(spatial):
        mapped = change.index_map.map_indices(tuple(iv.var for iv in order))
        same = all(
            analyzer.can_prove_equal(a, b) for a, b in zip(mapped, store.indices, strict=True)
        )
        if same and all(
            builders.is_const_int(iv.dom.min, 0) and analyzer.can_prove_equal(iv.dom.extent, e)
            for iv, e in zip(order, change.old.shape, strict=True)
        ):
            return order
    return None


def _orders(items: list[_Item]) -> list[list[_Item]]:
    """Iterator (or loop) orders to try against the store's indices: every permutation for
    small ranks (a producer may write a transposed buffer), else as declared."""
    if len(items) > 4:
        return [items]
    return [list(p) for p in itertools.permutations(items)]


def _loop_chain(func: PrimFunc, realize: BlockRealize) -> list[For]:
    """The loops around `realize` up to its scope block, outermost first."""
    for node, ancestors in walk_with_ancestors(func.body):
        if node is realize:
            loops: list[For] = []
            for ancestor in ancestors:
                loops = (
                    []
                    if isinstance(ancestor, Block)
                    else loops + ([ancestor] if isinstance(ancestor, For) else [])
                )
            return loops
    return []


def _bound_loops(
    realize: BlockRealize, spatial: list[IterVar], chain: list[For]
) -> list[For] | None:
    """The loop each spatial iterator is bound to (its binding simplifies to the loop variable;
    distinct, from 0, at least the iterator's extent, holding nothing but the producer), or None."""
    by_var = {lp.loop_var: lp for lp in chain}
    analyzer = Analyzer()
    for loop in chain:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent), allow_override=True)
    values = dict(zip(realize.block.iter_vars, realize.iter_values, strict=True))
    loops = []
    for iv in spatial:
        # a non-Var binding just finds no loop
        loop = by_var.get(analyzer.simplify(values[iv]))  # type: ignore[call-overload]
        if loop is None or loop in loops or not builders.is_const_int(loop.min, 0):
            return None
        if not analyzer.can_prove(builders.ge(loop.extent, iv.dom.extent)):
            return None
        loops.append(loop)
    outer = min(loops, key=chain.index)
    if any(not isinstance(lp.body, For | BlockRealize) for lp in chain[chain.index(outer) :]):
        return None
    return loops


def _spatial_guards(
    realize: BlockRealize, spatial: list[IterVar], loops: list[For]
) -> list[PrimExpr] | None:
    """The predicate's conjuncts over the spatial loops that say more than the old domain,
    rewritten over the spatial iterators (each bound to its loop alone); None if one cannot be."""
    loop_vars = {lp.loop_var for lp in loops}
    binding = loop_binding(realize, spatial)
    analyzer = Analyzer()
    for loop in loops:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    guards = []
    # The old domain, which the new loops replace, is known; a conjunct it implies restates it.
    with analyzer.constraint_scope(in_domains(realize, spatial)):
        for conjunct in builders.conjuncts(realize.predicate):
            used = {n for n in post_order(conjunct) if isinstance(n, Var)}
            if not used & loop_vars or analyzer.can_prove(conjunct):
                continue
            if not used <= set(binding):
                return None
            guards.append(substitute(conjunct, binding))
    return guards


def _kept_conjuncts(predicate: PrimExpr, spatial_loops: set[Var]) -> list[PrimExpr] | None:
    """The predicate's conjuncts that do not bound the spatial loops (those are the old domain,
    which the new loops replace); None if a conjunct mixes both."""
    kept = []
    for conjunct in builders.conjuncts(predicate):
        used = {n for n in post_order(conjunct) if isinstance(n, Var)}
        if not used & spatial_loops:
            kept.append(conjunct)
        elif not used <= spatial_loops:
            return None
    return kept


def _uses_spatial_loops(realize: BlockRealize, spatial: list[IterVar], loops: list[For]) -> bool:
    """An iterator other than the spatial ones is bound to an expression of their loops."""
    loop_vars = {lp.loop_var for lp in loops}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if iv not in spatial and any(n in loop_vars for n in post_order(value)):
            return True
    return False


# -- a parameter relaid out again ------------------------------------------------------------


def compose_assumption(func: PrimFunc, prior: Any, change: LayoutChange) -> PrimFunc | None:
    """For a parameter that already carries a buffer constraint from an earlier layout step
    (`prior`: its original buffer, composed map and constant pad): the one constraint of the
    composed map, as a single transform_layout would state it; None when the earlier step left
    no constraint or the two steps' pads differ."""
    root = _root(func)
    items = list(root.body.seq) if isinstance(root.body, SeqStmt) else [root.body]
    name = assumption_name(change.old)
    found = [
        s for s in items if any(isinstance(n, Block) and n.name_hint == name for n in post_order(s))
    ]
    pad = prior.pad
    if (
        len(found) != 1
        or pad is None
        or any(isinstance(n, Var | BufferLoad) for n in post_order(pad))
    ):
        return None
    if change.has_padding and (change.pad is None or not same_expr(change.pad, pad)):
        return None
    composed = prior.index_map.then(change.index_map)
    try:
        inverse, padding = composed.non_surjective_inverse(prior.original.shape)
    except UserError:  # the composition is no split/fuse/reorder: keep the step-wise constraints
        return None
    whole = LayoutChange(prior.original, change.new, composed, inverse, padding, pad)
    kept = [s for s in items if s is not found[0]]
    func = replace_in_func(func, root, with_changes(root, body=SeqStmt.flatten(kept)))
    return add_assumption(func, whole)
