"""decompose_reduction (a reduction's init into its own block) and add_unit_loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tessel.arith import presburger
from tessel.ir import builders
from tessel.ir.expr import And, PrimExpr, Range, Var
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.primitives.block_queries import mentions_var
from tessel.schedule.state import find_block_realize, find_loop, replace_stmt
from tessel.support.dtype import DataType
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def decompose_reduction(sch: Schedule, block_rv: BlockRV, loop_rv: LoopRV) -> tuple[PrimFunc, str]:
    """The function with the init of `block_rv` moved to a new block before `loop_rv`.

    The new `<name>_init` block has a copy of the block's data-parallel iterators and sits in
    copies of the loops at or below `loop_rv` that its bindings use (TVM's semantics).
    """
    realize = sch.block(block_rv, "decompose_reduction")
    loop = sch.loop(loop_rv, "decompose_reduction")
    block = realize.block
    located = find_block_realize(sch.func, block.name_hint)
    assert located is not None
    loops = located.enclosing_loops()
    _check_decompose(sch, realize, loop, loops)
    init_block, init_values = _init_block(block, realize)
    chosen: list[For] = []
    discarded: list[Var] = []
    for outer in reversed(loops[loops.index(loop) :]):
        if any(mentions_var(value, outer.loop_var) for value in init_values):
            chosen.append(outer)
        else:
            discarded.append(outer.loop_var)
    predicate = _drop_conjuncts(realize.predicate, discarded)
    body: Stmt = BlockRealize(init_values, predicate, init_block)
    renamed: dict[Var, PrimExpr] = {}
    for old in chosen:  # innermost first
        new_var = Var(f"{old.loop_var.name}_init", old.loop_var.dtype)
        renamed[old.loop_var] = new_var
        body = For(
            new_var, old.min, old.extent, old.kind, body, old.thread_binding, old.annotations
        )
    body = substitute(body, renamed)
    # Without its init the update block reads what it accumulates into (TVM lists it again).
    update = with_changes(block, init=None)
    update = with_changes(update, reads=infer_access_regions(update)[0])
    without_init = with_changes(realize, block=update)
    func = replace_stmt(sch.func, realize, without_init)
    new_loop = _refind(func, loop)
    return replace_stmt(func, new_loop, SeqStmt((body, new_loop))), init_block.name_hint


def _refind(func: PrimFunc, loop: For) -> For:
    located = find_loop(func, loop.loop_var)
    assert located is not None
    assert isinstance(located.node, For)
    return located.node


def _check_decompose(sch: Schedule, realize: BlockRealize, loop: For, loops: list[For]) -> None:
    block = realize.block

    def fail(rule: str, message: str) -> ScheduleError:
        return ScheduleError(
            "decompose_reduction", rule, message, func=sch.func, culprits=(loop, block)
        )

    if not any(loop is outer for outer in loops):
        raise fail(
            "loop-position",
            f"loop `{loop.loop_var.name}` is not around block `{block.name_hint}` within its scope",
        )
    if block.init is None or not any(
        iv.iter_type is IterVarType.COMM_REDUCE for iv in block.iter_vars
    ):
        raise fail(
            "not-reduction", f"block `{block.name_hint}` is not a reduction block with an init"
        )
    _check_no_repeating_loop(realize, loops[loops.index(loop) :], fail)
    _check_each_point_once(realize, loops[loops.index(loop) :], fail)
    above = loops[: loops.index(loop)]
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.iter_type is IterVarType.DATA_PAR:
            continue
        for outer in above:
            if mentions_var(value, outer.loop_var):
                raise fail(
                    "loop-height",
                    f"loop `{outer.loop_var.name}`, above `{loop.loop_var.name}`, is bound to "
                    f"the reduction iterator `{iv.var.name}`; the init must go above every "
                    "reduction loop",
                )


def _check_no_repeating_loop(
    realize: BlockRealize, inner: list[For], fail: Callable[[str, str], ScheduleError]
) -> None:
    """Every loop from the chosen one down must be bound to an iterator of the block: under a
    loop bound to none, the block repeats its whole reduction (re-initialised each time), and an
    init hoisted above that loop would run once for all the repetitions (issue 12)."""
    block = realize.block
    for candidate in inner:
        if builders.is_const_int(candidate.extent, 1):
            continue
        if not any(mentions_var(value, candidate.loop_var) for value in realize.iter_values):
            raise fail(
                "unbound-loop",
                f"loop `{candidate.loop_var.name}` is bound to no iterator of block "
                f"`{block.name_hint}`, so the block repeats its reduction on every iteration of "
                "it; an init placed above it would run only once. Decompose at a loop inside "
                f"`{candidate.loop_var.name}`",
            )


def _check_each_point_once(
    realize: BlockRealize, inner: list[For], fail: Callable[[str, str], ScheduleError]
) -> None:
    """Under the chosen loop, the spatial loops must reach each output point once: after
    compute_at with overlapping windows the block recomputes some points (re-initialising them
    each time), and a hoisted init would let those reductions accumulate twice (fuzz seed 3,
    case 2656)."""
    block = realize.block
    spatial = [
        v
        for iv, v in zip(block.iter_vars, realize.iter_values, strict=True)
        if iv.iter_type is IterVarType.DATA_PAR
    ]
    reduction = [
        v
        for iv, v in zip(block.iter_vars, realize.iter_values, strict=True)
        if iv.iter_type is not IterVarType.DATA_PAR
    ]
    loops = [
        lp
        for lp in inner
        if not builders.is_const_int(lp.extent, 1)
        and any(mentions_var(v, lp.loop_var) for v in spatial)
        and not any(mentions_var(v, lp.loop_var) for v in reduction)
    ]
    if not loops or not spatial:
        return
    domain = {lp.loop_var: Range(lp.min, lp.extent) for lp in loops}
    try:
        once = presburger.is_injective(spatial, domain, realize.predicate)
    except presburger.NotPresburger:
        return  # not decidable here: keep TVM's behaviour
    if not once:
        raise fail(
            "repeated-instances",
            f"under loop `{inner[0].loop_var.name}` block `{block.name_hint}` computes some output "
            "points more than once (its spatial bindings repeat); an init placed above the loop "
            "would run once for several full reductions",
        )


def _init_block(block: Block, realize: BlockRealize) -> tuple[Block, tuple[PrimExpr, ...]]:
    """The init block over copies of the data-parallel iterators, and its bindings."""
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    mapping: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.iter_type is not IterVarType.DATA_PAR:
            continue
        new_var = Var(f"{iv.var.name}_init", iv.var.dtype)
        iter_vars.append(IterVar(iv.dom, new_var, iv.iter_type))
        values.append(value)
        mapping[iv.var] = new_var
    assert block.init is not None
    init = Block(
        tuple(iter_vars),
        (),
        (),
        f"{block.name_hint}_init",
        substitute(block.init, mapping),
        annotations=block.annotations,
    )
    reads, writes = infer_access_regions(init)
    return with_changes(init, reads=reads, writes=writes), tuple(values)


def _drop_conjuncts(predicate: PrimExpr, discarded: list[Var]) -> PrimExpr:
    """`predicate` without the conjuncts that mention a discarded loop variable."""
    kept: PrimExpr = builders.const(True)
    for term in _conjuncts(predicate):
        if not any(mentions_var(term, var) for var in discarded):
            kept = builders.logical_and(kept, term)
    return kept


def _conjuncts(predicate: PrimExpr) -> list[PrimExpr]:
    if isinstance(predicate, And):
        return _conjuncts(predicate.a) + _conjuncts(predicate.b)
    return [predicate]


def add_unit_loop(sch: Schedule, target: BlockRV | LoopRV) -> tuple[PrimFunc, Var]:
    """The function with a loop of extent 1 around a loop, or around a block's realize."""
    if isinstance(target, LoopRV):
        stmt: Stmt = sch.loop(target, "add_unit_loop")
    else:
        stmt = sch.block(target, "add_unit_loop")
        located = find_block_realize(sch.func, target.name)
        if located is None or located.parent_block() is None:
            raise ScheduleError(
                "add_unit_loop",
                "root-block",
                "the root block cannot be put in a loop",
                func=sch.func,
                culprits=(stmt.block,),
            )
    var = Var("u", DataType.of("int32"))
    unit = For(var, builders.const(0, "int32"), builders.const(1, "int32"), ForKind.SERIAL, stmt)
    return replace_stmt(sch.func, stmt, unit), var
