"""compute_inline (a producer into its consumers) and reverse_compute_inline (a consumer into
its producer), with TVM's semantics: the inlined block and the loops that only held it vanish."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tessel.arith import Analyzer, IntSet, IterMapError, detect_iter_map, inverse_iter_map
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.block_scope import (
    Scope,
    drop_alloc,
    is_output_buffer,
    removable_subtree,
    remove_stmt,
    scope_of,
)
from tessel.schedule.state import Located, find_block_realize, replace_stmt
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def _locate(sch: Schedule, rv: BlockRV, primitive: str) -> Located:
    sch.block(rv, primitive)  # a stale handle raises here
    located = find_block_realize(sch.func, rv.name)
    assert located is not None
    return located


def _fail(sch: Schedule, primitive: str, rule: str, message: str, *culprits: Node) -> ScheduleError:
    return ScheduleError(primitive, rule, message, func=sch.func, culprits=culprits)


def _single_store(sch: Schedule, primitive: str, block: Block, form: str) -> BufferStore:
    """The block's body as one unpredicated BufferStore, else `<primitive>.not-single-store`."""
    body = block.body
    if not isinstance(body, BufferStore) or body.predicate is not None:
        raise _fail(
            sch,
            primitive,
            "not-single-store",
            f"the body of block `{block.name_hint}` must be a single store of the form {form}",
            block,
        )
    return body


def _check_data_parallel(sch: Schedule, primitive: str, block: Block) -> None:
    reduce = [iv.var.name for iv in block.iter_vars if iv.iter_type is not IterVarType.DATA_PAR]
    if block.init is not None or reduce:
        raise _fail(
            sch,
            primitive,
            "reduction",
            f"block `{block.name_hint}` is a reduction (iterators {reduce}"
            f"{', with an init' if block.init is not None else ''}); only a data-parallel "
            "block can be inlined",
            block,
        )


def _uses(node: Node, variables: set[Var]) -> list[Var]:
    return [n for n in post_order(node) if isinstance(n, Var) and n in variables]


# ------------------------------------------------------------------------------ compute_inline


def compute_inline(sch: Schedule, rv: BlockRV) -> PrimFunc:
    """The function with block `rv`'s value substituted into every read of its buffer."""
    located = _locate(sch, rv, "compute_inline")
    realize: BlockRealize = located.node  # type: ignore[assignment]  # a block realize
    block = realize.block
    store = _single_store(sch, "compute_inline", block, "`B[vi, vj, ...] = f(vi, vj, ...)`")
    _check_data_parallel(sch, "compute_inline", block)
    index_vars = _store_index_vars(sch, block, store)
    buffer = store.buffer
    if is_output_buffer(sch.func, buffer):
        raise _fail(
            sch,
            "compute_inline",
            "output-buffer",
            f"block `{block.name_hint}` writes `{buffer.name}`, a parameter of the function; "
            "its values must be stored, so it cannot be inlined",
            block,
        )
    _check_sole_pure_writer(sch, "compute_inline", realize, scope_of(sch.func, located), buffer)
    target = removable_subtree("compute_inline", sch.func, located)
    func = remove_stmt(sch.func, target)
    inliner = _LoadInliner(
        buffer,
        lambda load: substitute(store.value, _index_binding(index_vars, load.indices)),
    )
    func = with_changes(func, body=inliner.visit(func.body))
    return drop_alloc(func, buffer)


def _index_binding(index_vars: list[Var], indices: Sequence[PrimExpr]) -> dict[Var, PrimExpr]:
    """Each store index bound to the load's index, cast to the index's type where they differ
    (an int32 axis read at an int64 index of a symbolic reshape)."""
    return {
        var: builders.cast(index, var.dtype)
        if index.dtype != var.dtype and not index.dtype.is_vector
        else index
        for var, index in zip(index_vars, indices, strict=True)
    }


def _store_index_vars(sch: Schedule, block: Block, store: BufferStore) -> list[Var]:
    """The store's indices: distinct block iterators, the only iterators its value uses."""
    iter_vars = {iv.var for iv in block.iter_vars}
    indices = list(store.indices)
    distinct = all(isinstance(i, Var) and i in iter_vars for i in indices) and len(
        {id(i) for i in indices}
    ) == len(indices)
    stray = _uses(store.value, iter_vars - set(indices)) if distinct else []
    if not distinct or stray:
        why = (
            f"its value uses `{stray[0].name}`, which is not an index"
            if stray
            else ("its indices must be distinct block iterators")
        )
        raise _fail(
            sch,
            "compute_inline",
            "not-single-store",
            f"block `{block.name_hint}` stores `{store.buffer.name}` in a form that cannot be "
            f"inlined: {why}",
            block,
        )
    return indices  # type: ignore[return-value]  # checked: all Vars


def _check_sole_pure_writer(
    sch: Schedule, primitive: str, realize: BlockRealize, scope: Scope, buffer: Buffer
) -> None:
    block = realize.block
    if scope.writers(buffer) != [realize] or any(r.buffer is buffer for r in block.reads):
        raise _fail(
            sch,
            primitive,
            "not-complete",
            f"block `{block.name_hint}` must be the only writer of `{buffer.name}` and must "
            "not read it",
            block,
        )
    if realize.predicate is not None and not builders.is_const_int(realize.predicate, 1):
        raise _fail(
            sch,
            primitive,
            "predicate",
            f"block `{block.name_hint}` has the predicate `{realize.predicate}`; inlining "
            "would drop it",
            block,
        )


class _LoadInliner(Mutator):
    """Replace every load of `buffer`; re-infer the regions of blocks that declared it."""

    def __init__(self, buffer: Buffer, value_of: Callable[[BufferLoad], PrimExpr]) -> None:
        super().__init__()
        self.buffer = buffer
        self.value_of = value_of

    def visit_BufferLoad(self, load: BufferLoad) -> PrimExpr:
        load = self.generic_visit(load)  # type: ignore[assignment]  # still a load
        return self.value_of(load) if load.buffer is self.buffer else load

    def visit_Block(self, block: Block) -> Block:
        new = self.generic_visit(block)
        declared = (*block.reads, *block.writes)
        if new is block or not any(r.buffer is self.buffer for r in declared):
            return new  # type: ignore[return-value]  # a block
        reads, writes = infer_access_regions(new)  # type: ignore[arg-type]  # a block
        return with_changes(new, reads=reads, writes=writes)  # type: ignore[arg-type]  # a block


# ---------------------------------------------------------------------- reverse_compute_inline


def reverse_compute_inline(sch: Schedule, rv: BlockRV) -> PrimFunc:
    """The function with consumer block `rv` folded into the single producer of what it reads."""
    p = "reverse_compute_inline"
    located = _locate(sch, rv, p)
    consumer: BlockRealize = located.node  # type: ignore[assignment]  # a block realize
    block = consumer.block
    store = _single_store(sch, p, block, "`C[g(vi, ...)] = h(B[f(vi, ...)], vi, ...)`")
    _check_data_parallel(sch, p, block)
    scope = scope_of(sch.func, located)
    buffer, producer = _single_producer(sch, scope, consumer)
    _check_sole_pure_writer(sch, p, consumer, scope, store.buffer)
    load_indices = _load_indices(sch, block, store, buffer)
    produced = _producer_store(sch, producer, buffer)
    inverse = _invert(sch, block, load_indices, produced.indices)
    _check_covered(sch, block, load_indices, producer.block, produced.indices)
    target = removable_subtree(p, sch.func, located)
    new_store = BufferStore(
        store.buffer,
        _LoadInliner(buffer, lambda _: produced.value).visit(substitute(store.value, inverse)),  # type: ignore[arg-type]  # an expression
        tuple(substitute(i, inverse) for i in store.indices),
    )
    new_block = with_changes(producer.block, body=new_store)
    reads, writes = infer_access_regions(new_block)
    new_block = with_changes(new_block, reads=reads, writes=writes)
    predicate = _inlined_predicate(producer, block, load_indices, produced.indices, inverse)
    new_producer = with_changes(producer, block=new_block, predicate=predicate)
    func = replace_stmt(remove_stmt(sch.func, target), producer, new_producer)
    return drop_alloc(func, buffer)


def _single_producer(
    sch: Schedule, scope: Scope, consumer: BlockRealize
) -> tuple[Buffer, BlockRealize]:
    """The one buffer the consumer reads that a block of the scope produces, and that block."""
    block = consumer.block
    produced = {id(r.buffer): r.buffer for r in block.reads if scope.writers(r.buffer)}
    producers = scope.producers(consumer)
    if len(produced) != 1 or len(producers) != 1:
        raise _fail(
            sch,
            "reverse_compute_inline",
            "single-producer",
            f"block `{block.name_hint}` must read exactly one buffer written in its scope, "
            f"written by one block; it reads {sorted(b.name for b in produced.values())} "
            f"from {len(producers)} blocks",
            block,
        )
    buffer = next(iter(produced.values()))
    others = [r.block.name_hint for r in scope.readers(buffer) if r is not consumer]
    if others or is_output_buffer(sch.func, buffer):
        raise _fail(
            sch,
            "reverse_compute_inline",
            "other-consumers",
            f"`{buffer.name}` is also read by {others or 'the caller'}; the producer must "
            f"keep writing it, so block `{block.name_hint}` cannot be inlined into it",
            block,
        )
    return buffer, producers[0]


def _load_indices(
    sch: Schedule, block: Block, store: BufferStore, buffer: Buffer
) -> tuple[PrimExpr, ...]:
    """The indices of the consumer's loads of `buffer`: every load must use the same ones."""
    loads = [n for n in post_order(store) if isinstance(n, BufferLoad) and n.buffer is buffer]
    first = loads[0].indices if loads else None
    if not loads or not all(structural_equal(n.indices, first) for n in loads):
        raise _fail(
            sch,
            "reverse_compute_inline",
            "not-single-store",
            f"block `{block.name_hint}` must read `{buffer.name}` at one index",
            block,
        )
    return first  # type: ignore[return-value]  # checked non-empty


def _producer_store(sch: Schedule, producer: BlockRealize, buffer: Buffer) -> BufferStore:
    block = producer.block
    body = block.body
    simple = isinstance(body, BufferStore) and body.buffer is buffer and body.predicate is None
    trivial = builders.is_const_int(producer.predicate, 1)
    if not (simple and trivial and block.init is None) or any(
        iv.iter_type is not IterVarType.DATA_PAR for iv in block.iter_vars
    ):
        raise _fail(
            sch,
            "reverse_compute_inline",
            "producer-pattern",
            f"the producer `{block.name_hint}` must be a data-parallel block without "
            f"predicate whose body is one store to `{buffer.name}`",
            block,
        )
    return body  # type: ignore[return-value]  # checked a BufferStore


def _invert(
    sch: Schedule, block: Block, load_indices: tuple[PrimExpr, ...], produced: tuple[PrimExpr, ...]
) -> dict[Var, PrimExpr]:
    """The consumer's iterators in terms of the producer's store indices (the load must be an
    injective affine map of the consumer's iterators)."""
    doms = {iv.var: iv.dom for iv in block.iter_vars}
    result = detect_iter_map(list(load_indices), doms, check_level="bijective")
    try:
        return inverse_iter_map(result, doms, list(produced), Analyzer())
    except IterMapError as err:
        raise _fail(
            sch,
            "reverse_compute_inline",
            "not-injective",
            f"the indices {list(load_indices)} of block `{block.name_hint}` are not an injective "
            f"affine map of its iterators: {err}",
            block,
        ) from err


def _check_covered(
    sch: Schedule,
    block: Block,
    load_indices: tuple[PrimExpr, ...],
    producer: Block,
    produced: tuple[PrimExpr, ...],
) -> None:
    """Every element the consumer loads must be one the producer stores: the consumer's
    instances that load anything else (a padding consumer's border) have no producer instance
    to live in, so inlining would lose their stores (fuzz seeds 0, 67 and 1938; 2, 535)."""
    analyzer = Analyzer()
    consumer_doms = {iv.var: iv.dom for iv in block.iter_vars}
    producer_doms = {iv.var: iv.dom for iv in producer.iter_vars}
    dense = detect_iter_map(list(produced), producer_doms, check_level="bijective")
    for load, element in zip(load_indices, produced, strict=True):
        need = analyzer.int_set(load, consumer_doms)
        have = analyzer.int_set(element, producer_doms)
        if dense and _contains(analyzer, have, need):
            continue
        raise _fail(
            sch,
            "reverse_compute_inline",
            "not-covered",
            f"block `{block.name_hint}` loads at index {load}, which over its iterators "
            f"reaches elements that the producer `{producer.name_hint}` does not store "
            f"(it stores at {element}); the consumer's instances there would be lost",
            block,
            producer,
        )


def _contains(analyzer: Analyzer, outer: IntSet, inner: IntSet) -> bool:
    ends = (outer.min_value, outer.max_value, inner.min_value, inner.max_value)
    if any(end is None for end in ends):
        return False
    return analyzer.can_prove(builders.le(outer.min_value, inner.min_value)) and analyzer.can_prove(
        builders.le(inner.max_value, outer.max_value)
    )


def _inlined_predicate(
    producer: BlockRealize,
    consumer: Block,
    load_indices: tuple[PrimExpr, ...],
    produced: tuple[PrimExpr, ...],
    inverse: dict[Var, PrimExpr],
) -> PrimExpr:
    """Where the producer's instance is one the consumer had: its iterators in their domains and
    the load landing exactly on the produced element; provable parts are dropped."""
    analyzer = Analyzer()
    for iv in producer.block.iter_vars:
        analyzer.bind(iv.var, iv.dom)
    conditions: list[PrimExpr] = []
    for iv in consumer.iter_vars:
        value = inverse[iv.var]
        conditions.append(builders.ge(value, iv.dom.min))
        conditions.append(builders.lt(value, builders.add(iv.dom.min, iv.dom.extent)))
    for index, element in zip(load_indices, produced, strict=True):
        conditions.append(builders.eq(substitute(index, inverse), element))
    predicate: PrimExpr = producer.predicate
    for condition in conditions:
        if not analyzer.can_prove(condition):
            predicate = builders.logical_and(predicate, analyzer.simplify(condition))
    binding = dict(
        zip((iv.var for iv in producer.block.iter_vars), producer.iter_values, strict=True)
    )
    return substitute(predicate, binding)
