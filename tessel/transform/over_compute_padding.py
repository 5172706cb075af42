"""OverComputePadding: compute on the padding instead of branching around it, where harmless.

docs/architecture.md §5 ("over-computation vs branches", from the thread of TVM's RFC 77): after
transform_layout pads buffers, a block still carries the branches that keep it off the padding.
This pass removes them when the analyzer proves that running on the padding changes nothing,
using the buffer constraints (`<buffer>_assumption` blocks) of the inputs:

- a store `W[I] = T.if_then_else(p, pad, e)` becomes `W[I] = e` when `e` equals `pad` wherever
  `p` holds; in a reduction, assuming `W[I]` holds `pad` there (the init stores it, and the
  updates keep it: induction over the reduction);
- a `T.where` conjunct over loops bound to reduction iterators is dropped, and the iterator's
  domain widened to its loop, when the update leaves the accumulator unchanged wherever the
  conjunct is false (the padded operand holds the combiner's identity) and every access stays
  inside its buffer.

It runs on blocks (the first pass of the pipeline), where updates and iterators are explicit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import Call, PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.analysis.buffer_constraint import BufferConstraint, constraint_of
from tessel.tir.analysis.reduction_identity import simplify_identities
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class OverComputePadding(PrimFuncPass):
    """Remove padding branches and reduction guards that are proven harmless to run through."""

    name: ClassVar[str] = "over_compute_padding"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        constraints = input_constraints(func)
        if not constraints:
            return func
        return with_changes(func, body=_Rewriter(constraints).visit(func.body))


def input_constraints(func: PrimFunc) -> list[BufferConstraint]:
    """The buffer constraints of the function on buffers it never writes (true everywhere)."""
    written = {n.buffer.data for n in post_order(func.body) if isinstance(n, BufferStore)}
    found = []
    for node in post_order(func.body):
        constraint = constraint_of(node) if isinstance(node, For) else None
        if constraint is None:
            continue
        reads = {
            n.buffer.data for n in post_order(constraint.condition) if isinstance(n, BufferLoad)
        }
        if reads and not reads & written:
            found.append(constraint)
    return _unique(found)


def _unique(items: list[BufferConstraint]) -> list[BufferConstraint]:
    kept: list[BufferConstraint] = []
    for item in items:
        if not any(same_expr(item.condition, k.condition) and item.vars == k.vars for k in kept):
            kept.append(item)
    return kept


class _Rewriter(Mutator):
    """Visits loops (binding their ranges) and rewrites each eligible block realize."""

    def __init__(self, constraints: list[BufferConstraint]) -> None:
        super().__init__()
        self.constraints = constraints
        self.loops: dict[Var, For] = {}

    def visit_For(self, loop: For) -> Node:
        self.loops[loop.loop_var] = loop
        return self.generic_visit(loop)

    def visit_BlockRealize(self, realize: BlockRealize) -> Node:
        realize = self.generic_visit(realize)  # type: ignore[assignment]  # a realize
        block = realize.block
        if not isinstance(block.body, BufferStore) or block.alloc_buffers or block.match_buffers:
            return realize
        prover = _Prover(self.constraints, block)
        realize = _drop_padding_branch(realize, prover)
        return _drop_reduction_guards(realize, prover, self.loops)


class _Prover:
    """An analyzer knowing the block's iterator ranges, with constraint facts on demand."""

    def __init__(self, constraints: list[BufferConstraint], block: Block) -> None:
        self.constraints = constraints
        self.analyzer = Analyzer()
        for iv in block.iter_vars:
            self.analyzer.bind(iv.var, iv.dom, allow_override=True)

    def rebind(self, var: Var, dom: Range) -> None:
        self.analyzer.bind(var, dom, allow_override=True)

    def equal_under(self, condition: PrimExpr, value: PrimExpr, expected: PrimExpr) -> bool:
        """`value == expected` wherever `condition` holds (case by case over its disjuncts)."""
        return all(
            self._equal_in_case(case, value, expected) for case in builders.disjuncts(condition)
        )

    def _equal_in_case(self, case: PrimExpr, value: PrimExpr, expected: PrimExpr) -> bool:
        with ExitStack() as facts:
            facts.enter_context(self.analyzer.constraint_scope(case))
            for fact in self._instances(value):
                facts.enter_context(self.analyzer.constraint_scope(fact))
            folded = simplify_identities(self.analyzer.simplify(value), self.analyzer)
            return same_expr(folded, self.analyzer.simplify(expected))

    def _instances(self, value: PrimExpr) -> Iterator[PrimExpr]:
        for constraint in self.constraints:
            yield from constraint.instances_for(value, self.analyzer)


def _padding_branch(value: PrimExpr) -> tuple[PrimExpr, PrimExpr, PrimExpr] | None:
    """(condition, pad, else-value) of `T.if_then_else(p, pad, e)` with a pure `pad`, else None."""
    if isinstance(value, Call) and value.op is builtin.if_then_else_op:
        condition, pad, rest = value.args
        if not any(isinstance(n, BufferLoad) for n in post_order(pad)):
            return condition, pad, rest
    return None


def _drop_padding_branch(realize: BlockRealize, prover: _Prover) -> BlockRealize:
    """Store the else-value everywhere when it equals the pad value on the padding."""
    block = realize.block
    store = block.body
    assert isinstance(store, BufferStore)
    branch = _padding_branch(store.value)
    if branch is None:
        return realize
    condition, pad, rest = branch
    accumulator = BufferLoad(store.buffer, store.indices)
    if block.init is not None:
        if not _init_writes(block.init, store, condition, pad, prover):
            return realize
        rest_on_padding = substitute_load(rest, accumulator, pad)
    elif any(isinstance(n, BufferLoad) and n.buffer is store.buffer for n in post_order(rest)):
        return realize
    else:
        rest_on_padding = rest
    if not prover.equal_under(condition, rest_on_padding, pad):
        return realize
    new_block = with_changes(block, body=with_changes(store, value=rest))
    if not _in_bounds(new_block, prover.analyzer):
        return realize
    return with_changes(realize, block=new_block)


def _init_writes(
    init: object, store: BufferStore, condition: PrimExpr, pad: PrimExpr, prover: _Prover
) -> bool:
    """The init stores `pad` into the accumulator wherever `condition` holds."""
    if not isinstance(init, BufferStore) or init.buffer is not store.buffer:
        return False
    if not all(same_expr(a, b) for a, b in zip(init.indices, store.indices, strict=True)):
        return False
    return prover.equal_under(condition, init.value, pad)


def substitute_load(expr: PrimExpr, load: BufferLoad, value: PrimExpr) -> PrimExpr:
    """`expr` with every load equal to `load` (same buffer and indices) replaced by `value`."""
    return _LoadReplacer(load, value).visit(expr)  # type: ignore[return-value]  # an expression


class _LoadReplacer(Mutator):
    def __init__(self, load: BufferLoad, value: PrimExpr) -> None:
        super().__init__()
        self.load, self.value = load, value

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        if load.buffer is self.load.buffer and all(
            same_expr(a, b) for a, b in zip(load.indices, self.load.indices, strict=True)
        ):
            return self.value
        return self.generic_visit(load)


def _drop_reduction_guards(
    realize: BlockRealize, prover: _Prover, loops: dict[Var, For]
) -> BlockRealize:
    """Drop `T.where` conjuncts over reduction loops whose extra iterations change nothing."""
    block = realize.block
    if block.init is None:
        return realize
    for conjunct in builders.conjuncts(realize.predicate):
        widened = _widened_iterator(realize, conjunct, loops)
        if widened is None:
            continue
        k, loop = widened
        candidate = _widen(realize, k, loop, conjunct)
        if _harmless(candidate, k, conjunct, prover, loop):
            realize = candidate
        else:
            original = realize.block.iter_vars[k]
            prover.rebind(original.var, original.dom)
    return realize


def _widened_iterator(
    realize: BlockRealize, conjunct: PrimExpr, loops: dict[Var, For]
) -> tuple[int, For] | None:
    """(iterator position, loop) when `conjunct` bounds only one loop, to which a reduction
    iterator is bound (its binding simplifies to the loop variable); else None."""
    used = {n for n in post_order(conjunct) if isinstance(n, Var)}
    if len(used) != 1:
        return None
    (var,) = used
    loop = loops.get(var)
    if loop is None:
        return None
    analyzer = Analyzer()
    analyzer.bind(var, Range(loop.min, loop.extent))
    for k, (iv, value) in enumerate(zip(realize.block.iter_vars, realize.iter_values, strict=True)):
        if iv.iter_type is IterVarType.COMM_REDUCE and analyzer.simplify(value) is var:
            return k, loop
    return None


def _widen(realize: BlockRealize, k: int, loop: For, conjunct: PrimExpr) -> BlockRealize:
    block = realize.block
    iters = list(block.iter_vars)
    iters[k] = with_changes(iters[k], dom=Range(loop.min, loop.extent))
    values = list(realize.iter_values)
    values[k] = loop.loop_var
    predicate = builders.conjunction(
        [c for c in builders.conjuncts(realize.predicate) if c is not conjunct]
    )
    return with_changes(
        realize,
        iter_values=tuple(values),
        predicate=predicate,
        block=with_changes(block, iter_vars=tuple(iters)),
    )


def _harmless(
    candidate: BlockRealize, k: int, conjunct: PrimExpr, prover: _Prover, loop: For
) -> bool:
    """The widened iterations stay in bounds and leave the accumulator unchanged."""
    block = candidate.block
    iv = block.iter_vars[k]
    prover.rebind(iv.var, iv.dom)
    store = block.body
    assert isinstance(store, BufferStore)
    outside = Analyzer().simplify(
        builders.logical_not(substitute(conjunct, {loop.loop_var: iv.var}))
    )
    accumulator = BufferLoad(store.buffer, store.indices)
    return prover.equal_under(outside, store.value, accumulator) and _in_bounds(
        block, prover.analyzer
    )


def _in_bounds(block: Block, analyzer: Analyzer) -> bool:
    """Every access of the block lies inside its buffer over the iterators' ranges."""
    for node in post_order(block.body):
        if isinstance(node, BufferLoad | BufferStore):
            for index, extent in zip(node.indices, node.buffer.shape, strict=True):
                bounds = analyzer.int_set(index)
                if bounds.min_value is None or bounds.max_value is None:
                    return False
                inside = builders.logical_and(
                    builders.ge(bounds.min_value, 0), builders.lt(bounds.max_value, extent)
                )
                if not analyzer.can_prove(inside):
                    return False
    return True
