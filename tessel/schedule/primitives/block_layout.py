"""transform_block_layout (remap a block's iteration space) and set_axis_separator.

transform_block_layout is TVM's: the block's loops, each bound one-to-one to an iterator, are
replaced by loops over the image of a bijective index map of the iterators; each new iterator
is spatial or reduction according to the iterators it is made of (never a mix).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.cache_stage import BufferReplacer
from tessel.schedule.primitives.layout import simplify_indices
from tessel.schedule.primitives.layout_assumptions import function_assumptions
from tessel.schedule.primitives.layout_padding import replace_in_func
from tessel.schedule.state import find_block_realize
from tessel.support.errors import UserError
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import For, ForKind, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

_PRIMITIVE = "transform_block_layout"


def transform_block_layout(sch: Schedule, rv: BlockRV, index_map: IndexMap) -> PrimFunc:
    """The function with `rv`'s iteration space remapped by the bijection `index_map`."""
    realize = sch.block(rv, _PRIMITIVE)
    block = realize.block
    loops = _bound_loops(sch, realize)
    extents = [iv.dom.extent for iv in block.iter_vars]
    assumptions = function_assumptions(sch.func)  # `T.assume(n > 0)` lets `i // n` be mapped
    try:
        inverse = index_map.inverse(extents, assumptions)
        shape = index_map.map_shape(extents, assumptions)
    except UserError as err:
        raise ScheduleError(
            _PRIMITIVE,
            "not-bijective",
            f"the map {index_map} is not a bijection of the iteration space "
            f"[{', '.join(map(str, extents))}] of block `{block.name_hint}`: {err}",
            func=sch.func,
            culprits=(block,),
            hint=getattr(err, "hint", None),
        ) from err
    kinds = [_kind(sch, block, index_map, e) for e in index_map.final_indices]
    new_loops = [Var(f"ax{k}", e.dtype) for k, e in enumerate(shape)]
    iters = tuple(
        IterVar(Range(builders.const(0, e.dtype), e), Var(f"v_ax{k}", e.dtype), kind)
        for k, (e, kind) in enumerate(zip(shape, kinds, strict=True))
    )
    to_new = dict(zip(inverse.initial_indices, (iv.var for iv in iters), strict=True))
    old_values = {
        iv.var: substitute(e, to_new)
        for iv, e in zip(block.iter_vars, inverse.final_indices, strict=True)
    }
    analyzer = Analyzer()
    for iv in iters:
        analyzer.bind(iv.var, iv.dom)
    new_block = simplify_indices(
        substitute(with_changes(block, iter_vars=iters), old_values), analyzer
    )
    reads, writes = infer_access_regions(new_block)  # type: ignore[arg-type]  # a block
    new_block = with_changes(new_block, reads=reads, writes=writes)
    # a block stays a block
    stmt: Stmt = BlockRealize(tuple(new_loops), realize.predicate, new_block)  # type: ignore[arg-type]
    for var, extent in reversed(list(zip(new_loops, shape, strict=True))):
        stmt = For(var, builders.const(0, var.dtype), extent, ForKind.SERIAL, stmt)
    return replace_in_func(sch.func, loops[0], stmt)


def _bound_loops(sch: Schedule, realize: BlockRealize) -> list[For]:
    """The loops directly around the block, one per iterator and bound to it, or ScheduleError."""
    block = realize.block
    located = find_block_realize(sch.func, block.name_hint)
    assert located is not None
    chain = located.enclosing_loops()[-len(block.iter_vars) :] if block.iter_vars else []
    simple = (
        len(chain) == len(block.iter_vars)
        and builders.is_const_int(realize.predicate, 1)
        and all(
            value is loop.loop_var for value, loop in zip(realize.iter_values, chain, strict=True)
        )
        and all(
            builders.is_const_int(lp.min, 0)
            and builders.is_const_int(iv.dom.min, 0)
            and _same(lp.extent, iv.dom.extent)
            for lp, iv in zip(chain, block.iter_vars, strict=True)
        )
        and all(isinstance(lp.body, For | BlockRealize) for lp in chain)
    )
    if not simple:
        raise ScheduleError(
            _PRIMITIVE,
            "simple-binding",
            f"block `{block.name_hint}` must sit alone in a nest of loops bound one "
            "to one, in order, to its iterators (no T.where, no other statements)",
            func=sch.func,
            culprits=(block,),
        )
    return chain


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    return Analyzer().can_prove_equal(a, b)


def _kind(sch: Schedule, block: Block, index_map: IndexMap, index: PrimExpr) -> IterVarType:
    """The kind of the new iterator `index`: that of the block iterators it is made of."""
    used = set(post_order(index))
    types = {
        iv.iter_type
        for iv, v in zip(block.iter_vars, index_map.initial_indices, strict=True)
        if v in used
    }
    if len(types) > 1:
        raise ScheduleError(
            _PRIMITIVE,
            "mixed-iter-types",
            f"new iterator `{index}` mixes spatial and reduction iterators",
            func=sch.func,
            culprits=(block,),
        )
    return types.pop() if types else IterVarType.DATA_PAR


def set_axis_separator(sch: Schedule, buffer: Buffer, separators: tuple[int, ...]) -> PrimFunc:
    """The function with `buffer` declared with `separators` (physical axis groups)."""
    ndim = len(buffer.shape)
    if list(separators) != sorted(set(separators)) or any(not 0 < s < ndim for s in separators):
        raise ScheduleError(
            "set_axis_separator",
            "separators",
            f"axis separators must be increasing positions in 1..{ndim - 1} of "
            f"`{buffer.name}`; got {list(separators)}",
            func=sch.func,
        )
    new = with_changes(buffer, axis_separators=separators)
    return BufferReplacer({buffer: new}).visit(sch.func)  # type: ignore[return-value]  # a PrimFunc
