"""fuse (directly nested loops into one) and reorder (loops of one perfect nest), with their
legality checks (TVM's rules, plus the reduction-order and dependence rules TVM leaves out)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from tessel.arith import Analyzer, detect_iter_map
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.primitives.block_queries import child_block_realizes, mentions_var
from tessel.schedule.state import find_block_realize, replace_stmt
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def fuse(sch: Schedule, rvs: Sequence[LoopRV]) -> tuple[PrimFunc, Var]:
    """The function with the loops fused, and the fused loop's variable."""
    loops = [sch.loop(rv, "fuse") for rv in rvs]
    if len(loops) < 2:
        raise ScheduleError("fuse", "loop-count", "needs at least two loops", func=sch.func)
    _check_fusable(sch, loops)
    # The widest index type: a symbolic (int64) extent fused with int32 ones counts in int64,
    # and each loop's digit is cast back to its own variable's type.
    dtype = max((loop.loop_var.dtype for loop in loops), key=lambda d: d.bits)
    fused = Var("_".join(loop.loop_var.name for loop in loops) + "_fused", dtype)
    total: PrimExpr = builders.const(1, dtype)
    for loop in loops:
        total = builders.mul(total, loop.extent)
    analyzer = Analyzer()  # as TVM: each digit simplified over the fused range, a unit loop 0
    analyzer.bind(fused, Range(builders.const(0, dtype), total))
    mapping: dict[Var, PrimExpr] = {}
    stride: PrimExpr = builders.const(1, dtype)
    for position, loop in reversed(list(enumerate(loops))):
        next_stride = analyzer.simplify(builders.mul(loop.extent, stride))
        # TVM's digit: the fused index below the next stride, divided by this one
        digit = builders.floormod(fused, next_stride) if position else fused
        digit = builders.floordiv(digit, stride)
        if builders.is_const_int(loop.extent, 1):
            digit = builders.const(0, dtype)
        value = builders.add(loop.min, analyzer.simplify(digit))
        if value.dtype != loop.loop_var.dtype:
            value = builders.cast(value, loop.loop_var.dtype)
        mapping[loop.loop_var] = value
        stride = next_stride
    body = substitute(loops[-1].body, mapping)
    new_loop = For(fused, builders.const(0, dtype), stride, ForKind.SERIAL, body)
    return replace_stmt(sch.func, loops[0], new_loop), fused


def _check_fusable(sch: Schedule, loops: list[For]) -> None:
    """Plain serial loops (TVM refuses annotated and thread-bound ones: the fused loop would
    silently lose them), each the only body of the previous, with bounds free of the others."""
    for loop in loops:
        if loop.kind is not ForKind.SERIAL or loop.annotations:
            what = f"is {loop.kind.value}" if loop.kind is not ForKind.SERIAL else "has annotations"
            raise ScheduleError(
                "fuse",
                "plain-loops",
                f"loop `{loop.loop_var.name}` {what}; the fused loop would lose it",
                func=sch.func,
                culprits=(loop,),
                hint="fuse first, then parallelize, bind or annotate the result",
            )
    for outer, inner in zip(loops, loops[1:], strict=False):
        if outer.body is not inner:
            between = (
                "statements" if not isinstance(outer.body, For) else f"`{outer.body.loop_var.name}`"
            )
            raise ScheduleError(
                "fuse",
                "adjacent-nesting",
                f"loops `{outer.loop_var.name}` and `{inner.loop_var.name}` are not "
                f"directly nested ({between} lies between them)",
                func=sch.func,
                culprits=(outer, inner),
            )
    for outer, inner in combinations(loops, 2):
        if _bounds_use(inner, outer):
            raise ScheduleError(
                "fuse",
                "dependent-loop",
                f"the bounds of loop `{inner.loop_var.name}` depend on the loop "
                f"`{outer.loop_var.name}` it would be fused with",
                func=sch.func,
                culprits=(outer, inner),
            )


def _bounds_use(loop: For, other: For) -> bool:
    """Whether `loop`'s min or extent uses `other`'s variable."""
    return mentions_var(loop.min, other.loop_var) or mentions_var(loop.extent, other.loop_var)


def reorder(sch: Schedule, rvs: Sequence[LoopRV]) -> PrimFunc:
    """The function with the given loops, which lie on one perfect nest, in the given order."""
    loops = [sch.loop(rv, "reorder") for rv in rvs]
    if len({id(loop) for loop in loops}) != len(loops):
        raise ScheduleError(
            "reorder", "duplicate", "a loop is given twice", func=sch.func, culprits=loops
        )
    nest = _perfect_nest(sch, loops)
    chosen = {id(loop) for loop in loops}
    order = iter(loops)
    headers = [next(order) if id(loop) in chosen else loop for loop in nest]
    _check_no_dependent_loop(sch, headers)
    _check_blocks(sch, nest, headers)
    body = nest[-1].body
    for header in reversed(headers):
        body = with_changes(header, body=body)
    return replace_stmt(sch.func, nest[0], body)


def _perfect_nest(sch: Schedule, loops: list[For]) -> list[For]:
    """The loops from the outermost to the innermost given one; each must be the only body."""
    chosen = {id(loop) for loop in loops}
    for start in loops:
        nest = [start]
        while not chosen <= {id(n) for n in nest} and isinstance(nest[-1].body, For):
            nest.append(nest[-1].body)
        if chosen <= {id(n) for n in nest}:
            return nest
    raise ScheduleError(
        "reorder",
        "not-a-nest",
        "the loops are not all on one perfect nest (each loop's body the next loop)",
        func=sch.func,
        culprits=loops,
    )


def _check_no_dependent_loop(sch: Schedule, headers: list[For]) -> None:
    """In the new order, no loop's bounds may use a loop now inside it."""
    for position, outer in enumerate(headers):
        for inner in headers[position + 1 :]:
            if _bounds_use(outer, inner):
                raise ScheduleError(
                    "reorder",
                    "dependent-loop",
                    f"the bounds of loop `{outer.loop_var.name}` depend on "
                    f"`{inner.loop_var.name}`, which the new order puts inside it",
                    func=sch.func,
                    culprits=(outer, inner),
                )


def _swapped_pairs(nest: list[For], headers: list[For]) -> list[tuple[For, For]]:
    """The pairs of loops of the nest whose relative order the reorder changes (a loop of one
    iteration moves freely and is left out)."""
    moving = [loop for loop in nest if not _is_one(loop.extent)]
    new_position = {id(loop): k for k, loop in enumerate(headers)}
    return [(a, b) for a, b in combinations(moving, 2) if new_position[id(a)] > new_position[id(b)]]


def _is_one(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def _check_blocks(sch: Schedule, nest: list[For], headers: list[For]) -> None:
    """Every block under the nest: S/R iterators with affine bindings (TVM), and, where the
    order changes, a reduction's init still first and no dependence carried across iterations."""
    realizes = child_block_realizes(nest[-1].body)
    swapped = _swapped_pairs(nest, headers)
    for realize in realizes:
        _check_iter_types(sch, realize)
        _check_affine(sch, realize, nest)
    if not swapped:
        return
    for realize in realizes:
        if realize.block.init is not None:
            _check_reduction_order(sch, realize, swapped, nest[0])
        _check_self_dependence(sch, realize)
    _check_cross_dependence(sch, realizes, nest)


def _check_iter_types(sch: Schedule, realize: BlockRealize) -> None:
    for iv in realize.block.iter_vars:
        if iv.iter_type not in (IterVarType.DATA_PAR, IterVarType.COMM_REDUCE):
            raise ScheduleError(
                "reorder",
                "iter-type",
                f"block `{realize.block.name_hint}` has the {iv.iter_type.name} "
                f"iterator `{iv.var.name}`; only spatial and reduction iterators "
                "say which orders are equivalent",
                func=sch.func,
                culprits=(realize.block,),
            )


def _loop_domain(sch: Schedule, realize: BlockRealize, top: For | None = None) -> dict[Var, Range]:
    """The ranges of the loops from `top` (default: the outermost) down to the block; loops
    above `top` stay symbols, as in TVM's partial affine check (the reorder does not move them)."""
    located = find_block_realize(sch.func, realize.block.name_hint)
    assert located is not None, "a block under the nest is in the function"
    loops = located.enclosing_loops()
    start = next((k for k, loop in enumerate(loops) if loop is top), 0)
    return {loop.loop_var: Range(loop.min, loop.extent) for loop in loops[start:]}


def _check_affine(sch: Schedule, realize: BlockRealize, nest: list[For]) -> None:
    """The bindings must be an affine map of the loops, under the block's predicate, each of
    stride one in its fused iterator (TVM's IsAffineBinding: `l * 16` is not)."""
    domain = _loop_domain(sch, realize, nest[0])
    name = realize.block.name_hint
    found = detect_iter_map(
        realize.iter_values,
        domain,
        realize.predicate,
        "surjective",
        simplify_trivial_iterators=False,
    )
    if found:
        strided = [
            (iv, s)
            for iv, s in zip(realize.block.iter_vars, found.indices, strict=True)
            if s.args and not builders.is_const_int(s.args[0].scale, 1)
        ]
        if not strided:
            return
        iv, _ = strided[0]
        raise ScheduleError(
            "reorder",
            "affine-binding",
            f"the binding of `{iv.var.name}` in block `{name}` steps by more "
            "than one; it is not an affine binding of the loops",
            func=sch.func,
            culprits=(realize.block,),
        )
    over_nest = any(mentions_var(realize.predicate, loop.loop_var) for loop in nest)
    if over_nest and detect_iter_map(realize.iter_values, domain, True, "surjective"):
        raise ScheduleError(
            "reorder",
            "block-predicate",
            f"the predicate `{realize.predicate}` of block `{name}` over the "
            "reordered loops is not a bound of an affine iterator",
            func=sch.func,
            culprits=(realize.block,),
        )
    raise ScheduleError(
        "reorder",
        "affine-binding",
        f"the bindings of block `{name}` are not an affine map of its loops",
        func=sch.func,
        culprits=(realize.block,),
    )


def _binds(realize: BlockRealize, loop: For) -> set[IterVarType]:
    """The kinds of the block iterators whose binding uses `loop`."""
    pairs = zip(realize.block.iter_vars, realize.iter_values, strict=True)
    return {iv.iter_type for iv, value in pairs if mentions_var(value, loop.loop_var)}


def _predicate_over_reductions(realize: BlockRealize) -> PrimExpr | bool:
    """The block's predicate where it bounds a loop of a reduction iterator, else True: a
    predicate over spatial loops alone (the halo rows compute_at keeps in range) only drops
    output elements whole, which leaves one-to-one bindings one-to-one and every remaining
    element's reduction starting where it did."""
    pairs = zip(realize.block.iter_vars, realize.iter_values, strict=True)
    reduce_values = [v for iv, v in pairs if iv.iter_type != IterVarType.DATA_PAR]
    predicate = realize.predicate
    loop_vars = {id(n): n for v in reduce_values for n in post_order(v) if isinstance(n, Var)}
    if any(mentions_var(predicate, var) for var in loop_vars.values()):
        return predicate
    return True


def _check_reduction_order(
    sch: Schedule, realize: BlockRealize, swapped: list[tuple[For, For]], top: For
) -> None:
    """The init runs at an output's first update only if, for each output element, the first
    update in the new order still has every reduction iterator at its start.

    One-to-one is judged with the loops above the reordered nest fixed (a block computed at a
    loop with a halo repeats rows across that loop's iterations, each time from its init); with
    a one-to-one binding, each spatial-only loop is fixed by the output element, and a
    reduction-only loop starts at 0 whatever its place; a loop bound to both kinds is not, so it
    may not cross a loop that binds a reduction iterator. Without one-to-one bindings, instances
    repeat, and no loop bound to a reduction iterator (or to nothing) may cross another loop.
    """
    one_to_one = bool(
        detect_iter_map(
            realize.iter_values,
            _loop_domain(sch, realize, top),  # loops above the nest stay fixed symbols
            _predicate_over_reductions(realize),
            "bijective",
        )
    )
    reduce = IterVarType.COMM_REDUCE
    for a, b in swapped:
        kinds = (_binds(realize, a), _binds(realize, b))
        if one_to_one:
            bad = any(len(k) == 2 for k in kinds) and all(reduce in k for k in kinds)
        else:
            bad = any(reduce in k or not k for k in kinds)
        if bad:
            raise ScheduleError(
                "reorder",
                "reduction-order",
                f"swapping loops `{a.loop_var.name}` and `{b.loop_var.name}` "
                f"would run the init of block `{realize.block.name_hint}` after "
                "updates of the same element ("
                + (
                    "a loop binds both spatial and reduction iterators)"
                    if one_to_one
                    else "the bindings are not one-to-one)"
                ),
                func=sch.func,
                culprits=(a, b, realize.block),
            )


def _dependence_error(sch: Schedule, message: str, *culprits: object) -> ScheduleError:
    return ScheduleError(
        "reorder",
        "carried-dependence",
        message,
        func=sch.func,
        culprits=culprits,
        hint="a dependence between iterations fixes their order",
    )


def _check_self_dependence(sch: Schedule, realize: BlockRealize) -> None:
    """A block may read what it writes only at the element it writes, and distinct spatial
    instances must write distinct elements: then its instances commute (reductions by their
    combiner)."""
    block = realize.block
    for write in block.writes:
        elsewhere = [
            r
            for r in block.reads
            if r.buffer is write.buffer
            and not structural_equal(r.region, write.region, map_free_vars=False)
        ]
        if elsewhere:
            raise _dependence_error(
                sch,
                f"block `{block.name_hint}` reads "
                f"`{write.buffer.name}` at other elements than it writes",
                block,
            )
        if not _injective(write, block):
            raise _dependence_error(
                sch,
                f"instances of block `{block.name_hint}` write the same "
                f"element of `{write.buffer.name}`",
                block,
            )


def _injective(write: BufferRegion, block: Block) -> bool:
    """Whether the written region, as a function of the spatial iterators, never overlaps itself."""
    domain = {iv.var: iv.dom for iv in block.iter_vars if iv.iter_type is IterVarType.DATA_PAR}
    indices: list[PrimExpr] = []
    for k, r in enumerate(write.region):
        if _is_one(r.extent):
            indices.append(r.min)
            continue
        if not isinstance(r.extent, IntImm):
            return False
        offset = Var(f"_offset{k}", r.min.dtype)
        domain[offset] = Range(builders.const(0, r.min.dtype), r.extent)
        indices.append(builders.add(r.min, offset))
    return bool(detect_iter_map(indices, domain, True, "bijective"))


def _check_cross_dependence(sch: Schedule, realizes: list[BlockRealize], nest: list[For]) -> None:
    """Another block under the nest may touch a written buffer only at the element written in
    the same iteration, and not while a reduction over the nest's loops is still partial."""
    analyzer = Analyzer()
    for writer, write, other, access in _shared_accesses(realizes):
        partial = any(IterVarType.COMM_REDUCE in _binds(writer, loop) for loop in nest)
        same = structural_equal(
            _in_loop_terms(other, access, analyzer),
            _in_loop_terms(writer, write, analyzer),
            map_free_vars=False,
        )
        if partial or not same:
            raise _dependence_error(
                sch,
                f"blocks `{writer.block.name_hint}` and "
                f"`{other.block.name_hint}` share `{write.buffer.name}` "
                "across iterations",
                writer.block,
                other.block,
            )


_Shared = tuple[BlockRealize, BufferRegion, BlockRealize, BufferRegion]


def _shared_accesses(realizes: list[BlockRealize]) -> list[_Shared]:
    """(writer, its write, another block, that block's access to the same buffer)."""
    return [
        (writer, write, other, access)
        for writer in realizes
        for write in writer.block.writes
        for other in realizes
        if other is not writer
        for access in (*other.block.reads, *other.block.writes)
        if access.buffer is write.buffer
    ]


def _in_loop_terms(
    realize: BlockRealize, access: BufferRegion, analyzer: Analyzer
) -> tuple[Range, ...]:
    """The accessed region with the block iterators replaced by their bindings, simplified."""
    block = realize.block
    mapping = dict(zip((iv.var for iv in block.iter_vars), realize.iter_values, strict=True))
    return tuple(
        Range(
            analyzer.simplify(substitute(r.min, mapping)),
            analyzer.simplify(substitute(r.extent, mapping)),
        )
        for r in access.region
    )
