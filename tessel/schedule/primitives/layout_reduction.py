"""Padding a buffer along a reduction axis: legal when the pad value is the combiner's identity.

TVM cannot pad a reduction axis in transform_layout (RFC 77's question 3: "how do we prove the
k padding should only be zero, when we do not know it is a matmul?"). Tessel decides it from the
block itself: replace the padded loads in the update by the pad value; the update must then
leave the accumulator unchanged (`reduction_identity.leaves_unchanged`). That is what lets a
later pass run the reduction over the padding instead of branching around it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.arith import Analyzer
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.primitives.layout import LayoutChange
from tessel.schedule.state import walk_with_ancestors
from tessel.tir.analysis.reduction_identity import (
    combiner_of,
    leaves_unchanged,
    simplify_identities,
)
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def check_reduction_padding(
    sch: Schedule, primitive: str, func: PrimFunc, change: LayoutChange
) -> None:
    """ScheduleError unless every reduction reading the padding along a reduction axis is left
    unchanged by the pad value."""
    if not change.has_padding or change.pad is None:
        return
    padded_vars = {n for n in post_order(change.padding) if isinstance(n, Var)}
    padded_dims = [v in padded_vars for v in change.inverse.initial_indices]
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, BlockRealize) and node.block.init is not None:
            _check_block(sch, primitive, node.block, change, padded_dims)


def _check_block(
    sch: Schedule, primitive: str, block: Block, change: LayoutChange, padded_dims: list[bool]
) -> None:
    store = block.body
    if not isinstance(store, BufferStore) or store.buffer is change.old:
        return
    reduce_vars = {iv.var for iv in block.iter_vars if iv.iter_type is IterVarType.COMM_REDUCE}
    loads = [
        n for n in post_order(store.value) if isinstance(n, BufferLoad) and n.buffer is change.old
    ]
    axis = next(
        (v for load in loads for v in _reduced_padded_vars(load, change, padded_dims, reduce_vars)),
        None,
    )
    if axis is None:
        return
    analyzer = Analyzer()
    for iv in block.iter_vars:
        analyzer.bind(iv.var, iv.dom, allow_override=True)
    padded_update = _PadSubstituter(change).visit(store.value)
    accumulator = BufferLoad(store.buffer, store.indices)
    # an expression stays an expression
    if leaves_unchanged(padded_update, accumulator, analyzer):  # type: ignore[arg-type]
        return
    raise ScheduleError(
        primitive,
        "reduction-padding-identity",
        # an expression stays an expression
        _message(block, store, change, axis, padded_update, analyzer),  # type: ignore[arg-type]
        func=sch.func,
        culprits=(block,),
    )


def _reduced_padded_vars(
    load: BufferLoad, change: LayoutChange, padded_dims: list[bool], reduce_vars: set[Var]
) -> list[Var]:
    """The reduction iterators that index a padded dimension of the load in the new layout."""
    new_indices = change.index_map.map_indices(load.indices)
    found = []
    for index, padded in zip(new_indices, padded_dims, strict=True):
        if padded:
            found.extend(n for n in post_order(index) if isinstance(n, Var) and n in reduce_vars)
    return found


class _PadSubstituter(Mutator):
    """Every load of the transformed buffer replaced by the pad value at its new indices."""

    def __init__(self, change: LayoutChange) -> None:
        super().__init__()
        self.change = change

    def visit_BufferLoad(self, load: BufferLoad) -> Node:
        if load.buffer is not self.change.old:
            return self.generic_visit(load)
        new_indices = self.change.index_map.map_indices(load.indices)
        pad = self.change.pad
        assert pad is not None
        return substitute(
            pad, dict(zip(self.change.inverse.initial_indices, new_indices, strict=True))
        )


def _message(
    block: Block,
    store: BufferStore,
    change: LayoutChange,
    axis: Var,
    padded_update: PrimExpr,
    analyzer: Analyzer,
) -> str:
    accumulator = BufferLoad(store.buffer, store.indices)
    combiner = combiner_of(store.value, accumulator)
    name = change.old.name
    head = (
        f"block `{block.name_hint}` reduces into `{store.buffer.name}` over `{axis.name}`, and "
        f"padding `{name}` along that axis is legal only if the padded elements leave the "
        f"accumulator unchanged"
    )
    if combiner is not None:
        identity = combiner.identity(store.buffer.dtype)
        head += (
            f": the combiner is `{combiner.name}`, whose identity is {identity}, so the padded "
            f"elements must make the term combined with `{accumulator}` equal {identity}"
        )
    return (
        f"{head}; pad_value {change.pad} turns the update `{store.value}` into "
        f"`{simplify_identities(padded_update, analyzer)}`"
    )
