"""blockize: the loops at and under a loop, with their one block, become a new outer block.

The block's bindings are divided (arith.subspace_divide) into a part over the loops outside and a
part over the loops inside: the outer block `<name>_o` iterates over the outer parts and holds
the inner loops; the inner block iterates over the inner parts, and each original iterator
becomes `outer * inner_extent + inner`. As in TVM, the outer block has one iterator per
original iterator (`T.axis.spatial(1, 0)` for a part wholly inside), the inner block leaves out
its constant parts, and a reduction's init moves to the outer block: a `<name>_init` block over
the inner loops its spatial iterators use. With `preserve_unit_iters` (TVM's default) a loop of
extent 1 stays in the bindings instead of becoming 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tessel.arith import Analyzer, normalize_iter_map_to_expr, subspace_divide
from tessel.arith.const_int_bound import NEG_INF, POS_INF
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.primitives.cache_stage import fresh_block_name
from tessel.schedule.state import find_block_realize, replace_in, replace_stmt, walk_with_ancestors
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


@dataclass
class _Side:
    """The iterators, bindings and predicate of one side (outer or inner) of the division."""

    iter_vars: list[IterVar]
    values: list[PrimExpr]
    predicate: PrimExpr


def blockize(
    sch: Schedule, loop_rv: LoopRV, preserve_unit_iters: bool = True
) -> tuple[PrimFunc, str]:
    """The function with `loop_rv`'s subtree blockized; the new outer block's name."""
    loop = sch.loop(loop_rv, "blockize")
    realize = _single_block(sch, loop)
    block = realize.block
    located = find_block_realize(sch.func, block.name_hint)
    assert located is not None
    loops = located.enclosing_loops()
    inner_loops = loops[next(k for k, outer in enumerate(loops) if outer is loop) :]
    divided = None
    # A unit loop kept as an iterator may not fuse or divide; then it is 0, as without the flag.
    for preserve in dict.fromkeys((preserve_unit_iters, False)):
        divided = _divide_bindings(block, realize, loops, inner_loops, preserve)
        if divided is not None:
            break
    if divided is None:
        raise ScheduleError(
            "blockize",
            "subspace-divide",
            f"the bindings of block `{block.name_hint}` cannot be divided into a part "
            f"over the loops outside `{loop.loop_var.name}` and a part over the loops "
            "inside it",
            func=sch.func,
            culprits=(loop, block),
        )
    outer, inner, var_map = divided
    inner_predicate = _with_own_guards(inner.predicate, realize.predicate, inner_loops)
    outer_init = None
    if block.init is not None:
        outer_init = _blockized_init(
            sch, block, inner, inner_predicate, inner_loops, substitute(block.init, var_map)
        )
    inner_block = _finish(
        with_changes(
            block,
            iter_vars=tuple(inner.iter_vars),
            body=substitute(block.body, var_map),
            init=None,
        )
    )
    inner_realize = BlockRealize(tuple(inner.values), inner_predicate, inner_block)
    nest = replace_in(loop, realize, inner_realize)
    outer_name = fresh_block_name(sch.func, f"{block.name_hint}_o")
    outer_block = _finish(Block(tuple(outer.iter_vars), (), (), outer_name, nest, init=outer_init))
    outer_block = with_changes(
        outer_block,
        reads=_clip_regions(_simplified_regions(outer_block.reads)),
        writes=_clip_regions(_simplified_regions(outer_block.writes)),
    )
    outer_loops = loops[: len(loops) - len(inner_loops)]
    outer_predicate = _with_own_guards(outer.predicate, realize.predicate, outer_loops)
    outer_realize = BlockRealize(tuple(outer.values), outer_predicate, outer_block)
    return replace_stmt(sch.func, loop, outer_realize), outer_block.name_hint


def _divide_bindings(
    block: Block,
    realize: BlockRealize,
    loops: list[For],
    inner_loops: list[For],
    preserve_unit_iters: bool,
) -> tuple[_Side, _Side, dict[Var, PrimExpr]] | None:
    """Both sides of the block's bindings divided at `inner_loops`, or None."""
    analyzer = Analyzer()
    domains = {outer.loop_var: Range(outer.min, outer.extent) for outer in loops}
    division = subspace_divide(
        realize.iter_values,
        domains,
        [lp.loop_var for lp in inner_loops],
        realize.predicate,
        analyzer=analyzer,
        preserve_unit_iters=preserve_unit_iters,
    )
    if not division:
        return None
    for each in loops:  # the bindings' ranges, for the iterators' domains
        analyzer.bind(each.loop_var, Range(each.min, each.extent))
    try:
        with analyzer.constraint_scope(realize.predicate):  # the points that run
            return _divide(block, division, analyzer, {lp.loop_var for lp in loops})
    except _Undividable:
        return None


def _with_own_guards(divided: PrimExpr, original: PrimExpr, side_loops: list[For]) -> PrimExpr:
    """One side's predicate from the division, and every conjunct of the block's predicate over
    that side's loops alone that it does not imply: a bound the division folded into an
    iterator's extent or offset must still guard the loop (`r_0 < 2` under a loop of 8, fuzz
    seed 2, case 1975; `ax1 >= 1` made the outer binding `ax1 - 1` over [0, 7), seed 11, case
    1703)."""
    inner = {lp.loop_var for lp in side_loops}
    analyzer = Analyzer()
    for loop in side_loops:
        analyzer.bind(loop.loop_var, Range(loop.min, loop.extent))
    kept = []
    with analyzer.constraint_scope(divided):
        for conjunct in builders.conjuncts(original):
            used = {n for n in post_order(conjunct) if isinstance(n, Var)}
            if used <= inner and not analyzer.can_prove(conjunct):
                kept.append(conjunct)
    return builders.conjunction([*builders.conjuncts(divided), *kept])


def _blockized_init(
    sch: Schedule,
    block: Block,
    inner: _Side,
    inner_predicate: PrimExpr,
    inner_loops: list[For],
    init: Stmt,
) -> Stmt:
    """The outer block's init, as TVM builds it: a block `<name>_init` over the inner spatial
    iterators the init uses (renamed `_init`), under copies of the inner loops they bind."""
    iters, values, renamed = [], [], {}
    used = {n for n in post_order(init) if isinstance(n, Var)}
    for iv, value in zip(inner.iter_vars, inner.values, strict=True):
        if iv.iter_type is IterVarType.DATA_PAR and iv.var in used:
            var = Var(iv.var.name + "_init", iv.var.dtype)
            renamed[iv.var] = var
            iters.append(IterVar(iv.dom, var, iv.iter_type))
            values.append(value)
    bound = {n for v in values for n in post_order(v) if isinstance(n, Var)}
    init_loops = [lp for lp in inner_loops if lp.loop_var in bound]
    inner_vars = {lp.loop_var for lp in inner_loops}
    kept = []
    for conjunct in builders.conjuncts(inner_predicate):
        mentioned = {n for n in post_order(conjunct) if isinstance(n, Var)} & inner_vars
        if mentioned <= bound:
            kept.append(conjunct)
        elif mentioned & bound:  # a guard tying the reduction loops to the spatial ones
            raise ScheduleError(
                "blockize",
                "reduction-init",
                f"block `{block.name_hint}` has an init, and its predicate `{conjunct}` ties "
                "the reduction loops to the spatial loops, so no init block can cover exactly "
                "the points it initialises",
                func=sch.func,
                culprits=(block,),
                hint="run decompose_reduction first",
            )
    copies = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in init_loops}
    name = fresh_block_name(sch.func, f"{block.name_hint}_init")
    init_block = _finish(Block(tuple(iters), (), (), name, substitute(init, renamed)))
    stmt: Stmt = BlockRealize(
        tuple(substitute(v, copies) for v in values),
        substitute(builders.conjunction(kept), copies),
        init_block,
    )
    for lp in reversed(init_loops):
        stmt = with_changes(lp, loop_var=copies[lp.loop_var], body=stmt)
    return stmt


class _Undividable(Exception):  # noqa: N818  (control flow, never leaves blockize)
    """A binding's part on one side has no domain to give its iterator."""


def _single_block(sch: Schedule, loop: For) -> BlockRealize:
    """The one block under `loop`, reached through loops only."""
    for node, ancestors in walk_with_ancestors(loop):
        if isinstance(node, BlockRealize) and all(isinstance(a, For) for a in ancestors):
            return node
        if not isinstance(node, For):
            break
    raise ScheduleError(
        "blockize",
        "single-block",
        f"loop `{loop.loop_var.name}` must hold a nest of loops around exactly one block",
        func=sch.func,
        culprits=(loop,),
    )


def _divide(
    block: Block, division: list, analyzer: Analyzer, loop_vars: set[Var]
) -> tuple[_Side, _Side, dict[Var, PrimExpr]]:
    """Both sides' iterators and bindings, and each original iterator in terms of them."""
    outer_pred, inner_pred = division[-1][0].extent, division[-1][1].extent
    outer, inner = _Side([], [], outer_pred), _Side([], [], inner_pred)
    var_map: dict[Var, PrimExpr] = {}
    for iv, (outer_mark, inner_mark) in zip(block.iter_vars, division[:-1], strict=True):
        outer_value = analyzer.simplify(normalize_iter_map_to_expr(outer_mark.source))
        inner_value = analyzer.simplify(normalize_iter_map_to_expr(inner_mark.source))
        outer_trivial = _is_trivial(outer_mark.extent, outer_value)
        inner_trivial = _is_trivial(inner_mark.extent, inner_value)
        # A side holding the whole binding (the other a constant 0) may keep the iterator's
        # domain when its value reads outer block iterators, which no loop range bounds.
        whole_inner = iv.dom if _is_zero(outer_mark.extent, outer_value) else None
        whole_outer = iv.dom if _is_zero(inner_mark.extent, inner_value) else None
        outer_part = _side_var(
            outer,
            iv,
            outer_mark.extent,
            outer_value,
            "" if inner_trivial else "_o",
            (analyzer, loop_vars, whole_outer),
            keep_constant=True,
        )
        inner_part = _side_var(
            inner,
            iv,
            inner_mark.extent,
            inner_value,
            "" if outer_trivial else "_i",
            (analyzer, loop_vars, whole_inner),
        )
        # A side of extent 1 is the one value it is bound to (TVM substitutes the other side's
        # iterator alone), even when preserve_unit_iters binds it to a unit loop.
        outer_term = _unit_value(outer_mark.extent, outer_value, analyzer, outer_part)
        inner_term = _unit_value(inner_mark.extent, inner_value, analyzer, inner_part)
        var_map[iv.var] = analyzer.simplify(
            builders.add(builders.mul(outer_term, inner_mark.extent), inner_term)
        )
    return outer, inner, var_map


def _unit_value(extent: PrimExpr, value: PrimExpr, analyzer: Analyzer, part: PrimExpr) -> PrimExpr:
    """The constant a part of extent 1 always takes; else the part itself."""
    if not builders.is_const_int(extent, 1):
        return part
    bound = analyzer.const_int_bound(value)
    if bound.min_value != bound.max_value or bound.min_value in (NEG_INF, POS_INF):
        return part
    return builders.const(bound.min_value, value.dtype)


def _is_trivial(extent: PrimExpr, value: PrimExpr) -> bool:
    return builders.is_const_int(extent, 1) and isinstance(value, IntImm)


def _is_zero(extent: PrimExpr, value: PrimExpr) -> bool:
    return _is_trivial(extent, value) and builders.is_const_int(value, 0)


def _side_var(
    side: _Side,
    iv: IterVar,
    extent: PrimExpr,
    value: PrimExpr,
    suffix: str,
    known: tuple[Analyzer, set[Var], Range | None],
    keep_constant: bool = False,
) -> PrimExpr:
    """A new iterator for one side's part of `iv`, or the part itself when it is a constant
    (unless `keep_constant`: the outer block keeps `T.axis.spatial(1, 0)`, as TVM's does)."""
    trivial = _is_trivial(extent, value)
    if trivial and not keep_constant:
        return value
    var = Var(iv.var.name + suffix, iv.var.dtype)
    # A kept constant's domain is the one point it takes ([0, 1) for the usual 0).
    domain = Range(value, extent) if trivial else _domain(extent, value, *known)
    side.iter_vars.append(IterVar(domain, var, iv.iter_type))
    side.values.append(value)
    return var


def _domain(
    extent: PrimExpr, value: PrimExpr, analyzer: Analyzer, loop_vars: set[Var], whole: Range | None
) -> Range:
    """[0, extent), or the values the binding takes over its loops (`loop_vars`) when they leave
    it: a division under a predicate counts the points the predicate keeps (`1 <= ax0 < 3` over
    a loop of 4: extent 2) while the binding ranges from 1 to 2 (fuzz campaign 10, case 5353).
    A value reading outer block iterators (campaign 10, case 17005) keeps the iterator's own
    domain `whole` when it is the whole binding; otherwise blockize refuses."""
    zero = builders.const(0, extent.dtype)
    used = {n for n in post_order(value) if isinstance(n, Var)}
    if not used <= loop_vars:
        if whole is None:
            raise _Undividable
        return whole
    if not isinstance(extent, IntImm):
        return Range(zero, extent)
    inside = builders.logical_and(builders.ge(value, zero), builders.lt(value, extent))
    if analyzer.can_prove(inside):
        return Range(zero, extent)
    bound = analyzer.const_int_bound(value)
    if {bound.min_value, bound.max_value} & {NEG_INF, POS_INF}:
        return Range(zero, extent)
    low = min(bound.min_value, 0)
    high = max(bound.max_value + 1, extent.value)
    return Range(builders.const(low, extent.dtype), builders.const(high - low, extent.dtype))


def _simplified_regions(regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
    """`regions` with their bounds simplified: a unit loop kept in a binding relaxes to
    `0 * 4`, which should read `0`."""
    analyzer = Analyzer()
    return tuple(
        BufferRegion(
            r.buffer,
            tuple(
                Range(analyzer.simplify(rng.min), analyzer.simplify(rng.extent)) for rng in r.region
            ),
        )
        for r in regions
    )


def _clip_regions(regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
    """`regions` cut to their buffers' shapes where both are constant.

    Relaxing an inner access guarded by a condition (a padding `if_then_else`) over the inner
    loops can reach past the buffer; nothing outside it is accessed, and primitives that copy
    the declared region (cache_read of an input) must not copy the outside (fuzz seed 1, 70).
    """
    clipped = tuple(_clip_region(region) for region in regions)
    return regions if all(a is b for a, b in zip(clipped, regions, strict=True)) else clipped


def _clip_region(region: BufferRegion) -> BufferRegion:
    shape = region.buffer.shape
    ranges = tuple(_clip_range(rng, dim) for rng, dim in zip(region.region, shape, strict=True))
    if all(a is b for a, b in zip(ranges, region.region, strict=True)):
        return region
    return BufferRegion(region.buffer, ranges)


def _clip_range(rng: Range, dim: PrimExpr) -> Range:
    """`rng` cut to [0, dim) when all three are constants and they overlap."""
    start, extent = rng.min, rng.extent
    if not (isinstance(start, IntImm) and isinstance(extent, IntImm) and isinstance(dim, IntImm)):
        return rng
    low = max(start.value, 0)
    high = min(start.value + extent.value, dim.value)
    if high <= low or (low, high - low) == (start.value, extent.value):
        return rng
    return Range(builders.const(low, start.dtype), builders.const(high - low, extent.dtype))


def _finish(block: Block) -> Block:
    reads, writes = infer_access_regions(block)
    return with_changes(block, reads=reads, writes=writes)
