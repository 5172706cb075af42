"""rfactor: a reduction split in two along one of its loops (TVM's semantics).

The loop `r` becomes a data-parallel dimension of a new buffer `<C>_rf`, computed by the block
`<name>_rf` (the original loops, partial results per `r`); the original block keeps its name and
becomes the write-back block, which reduces `<C>_rf` over `r` in copies of the loops it needs.

Where the write-back goes: the block's loops split into *shared* ones (outer loops that also hold
other blocks, e.g. after `compute_at`) and *own* ones (holding only this block; the factored loop
is one). The write-back is placed right after the outermost own loop, inside the shared loops, so
it runs before any later sibling that reads the result (issue 12). A shared loop may not carry
the reduction: the write-back would then run once per partial reduction (`shared-reduction-loop`).

Predicates (issue 12): the rfactor block keeps the block's predicate. The write-back must reduce
exactly the slots of `<C>_rf` that the rfactor block wrote, and each of those must have been
initialised, i.e. the rfactor block ran at its init point (every reduction loop at its minimum).
The own loops the write-back drops (those bound only to reduction iterators) are therefore set
to their minimum in the predicate. That is exact when every conjunct that mentions them, or the
factored loop, is `f < 0` / `f <= 0` with `f` non-decreasing in those loops (what `split`
produces: `outer * factor + inner < extent`); otherwise rfactor refuses (`predicate`). The same
condition on the factored loop makes the write-back's own init point its first iteration. A loop
bound to both data-parallel and reduction iterators (after `fuse`) would initialise the slots of
one data-parallel value only, so it is refused (`mixed-loop`), as TVM does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tessel.arith.analyzer import Analyzer
from tessel.ir import builders
from tessel.ir.expr import (
    GE,
    GT,
    LE,
    LT,
    Add,
    FloatImm,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Var,
)
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.primitives.block_queries import mentions_var
from tessel.schedule.primitives.cache_stage import fresh_block_name, fresh_buffer_name
from tessel.schedule.state import (
    Located,
    find_block_realize,
    replace_stmt,
    walk_with_ancestors,
)
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

_IDENTITY: dict[type, int] = {
    Add: 0,
    Mul: 1,
}  # min and max are idempotent: any init value stays correct


@dataclass(frozen=True)
class _Reducer:
    """`buffer[indices] = combiner(buffer[indices], rhs)` with init `buffer[indices] = init`."""

    combiner: type
    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    init: PrimExpr
    rhs: PrimExpr
    load_first: bool

    def combine(self, load: PrimExpr, rhs: PrimExpr) -> PrimExpr:
        return self.combiner(load, rhs) if self.load_first else self.combiner(rhs, load)


def rfactor(sch: Schedule, loop_rv: LoopRV, factor_axis: int) -> tuple[PrimFunc, str]:
    """The function with the reduction under `loop_rv` factored; the rfactor block's name."""
    loop = sch.loop(loop_rv, "rfactor")
    realize = _single_block(sch, loop)
    block = realize.block
    reducer = _reducer(sch, loop, block)
    _check_loop_binding(sch, loop, realize)
    axis = _factor_axis(sch, loop, reducer, factor_axis)
    located = find_block_realize(sch.func, block.name_hint)
    assert located is not None
    loops = located.enclosing_loops()
    own = _own_loops(loops)
    _check_shared_loops(sch, loops[: len(loops) - len(own)], realize)
    _check_mixed_loops(sch, loops, realize)
    wb_predicate = _write_back_predicate(sch, realize, loop, own)
    scope = located.parent_block()
    assert scope is not None
    shape = list(reducer.buffer.shape)
    shape.insert(axis, loop.extent)
    # Fresh names: the write-back keeps the block's name, so a second rfactor of it (a tree of
    # partial results) would otherwise make a second `<name>_rf`.
    rf_name = fresh_buffer_name(sch.func, f"{reducer.buffer.name}_rf")
    rf_buffer = decl_buffer(tuple(shape), reducer.buffer.dtype, rf_name)
    rf_block_name = fresh_block_name(sch.func, f"{block.name_hint}_rf")
    rf_realize = _rf_block(realize, reducer, loop, loops, rf_buffer, axis, rf_block_name)
    wb_nest = _write_back(realize, reducer, loop, own, rf_buffer, axis, wb_predicate)
    func = replace_stmt(sch.func, realize, rf_realize)
    func = _insert_after(func, _refind_loop(func, own[0]), wb_nest)
    scope_realize = find_block_realize(func, scope.name_hint)
    assert scope_realize is not None
    assert isinstance(scope_realize.node, BlockRealize)
    old_scope = scope_realize.node.block
    new_scope = with_changes(old_scope, alloc_buffers=(*old_scope.alloc_buffers, rf_buffer))
    return replace_stmt(func, old_scope, new_scope), rf_realize.block.name_hint


def _factor_axis(sch: Schedule, loop: For, reducer: _Reducer, factor_axis: int) -> int:
    ndim = len(reducer.buffer.shape)
    if not -(ndim + 1) <= factor_axis <= ndim:
        raise ScheduleError(
            "rfactor",
            "factor-axis",
            f"factor_axis must lie in [{-(ndim + 1)}, {ndim}] "
            f"for the {ndim}-d buffer `{reducer.buffer.name}`, got {factor_axis}",
            func=sch.func,
            culprits=(loop,),
        )
    return factor_axis % (ndim + 1)


def _refind_loop(func: PrimFunc, loop: For) -> Located:
    for node, ancestors in walk_with_ancestors(func.body):
        if isinstance(node, For) and node.loop_var is loop.loop_var:
            return Located(node, ancestors)
    raise AssertionError("the loop nest vanished")


def _insert_after(func: PrimFunc, located: Located, stmt: Stmt) -> PrimFunc:
    """`func` with `stmt` placed right after the located statement, in the same sequence."""
    parent = located.ancestors[-1] if located.ancestors else None
    if isinstance(parent, SeqStmt):
        items: list[Stmt] = []
        for item in parent.seq:
            items.extend((item, stmt) if item is located.node else (item,))
        return replace_stmt(func, parent, SeqStmt(tuple(items)))
    return replace_stmt(func, located.node, SeqStmt((located.node, stmt)))


def _block_count(stmt: Stmt) -> int:
    return sum(1 for n, _ in walk_with_ancestors(stmt) if isinstance(n, BlockRealize))


def _own_loops(loops: list[For]) -> list[For]:
    """The innermost loops that hold nothing but the block (the factored loop is one of them)."""
    for index, outer in enumerate(loops):
        if _block_count(outer) == 1:
            return loops[index:]
    raise AssertionError("the factored loop holds more than one block")


def _check_shared_loops(sch: Schedule, shared: list[For], realize: BlockRealize) -> None:
    """A loop that also holds other blocks may not carry the reduction."""
    for outer in shared:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if iv.iter_type is IterVarType.COMM_REDUCE and mentions_var(value, outer.loop_var):
                raise ScheduleError(
                    "rfactor",
                    "shared-reduction-loop",
                    f"loop `{outer.loop_var.name}` is bound to the reduction iterator "
                    f"`{iv.var.name}` but also holds other blocks, so the write-back block "
                    "would have no place after the whole reduction and before those blocks",
                    func=sch.func,
                    culprits=(outer, realize.block),
                    hint="move the other blocks out of the reduction loops first",
                )


def _check_mixed_loops(sch: Schedule, loops: list[For], realize: BlockRealize) -> None:
    """A loop bound to both kinds of iterator would leave rfactor slots uninitialised."""
    pairs = list(zip(realize.block.iter_vars, realize.iter_values, strict=True))
    for outer in loops:
        kinds = {iv.iter_type for iv, value in pairs if mentions_var(value, outer.loop_var)}
        if {IterVarType.DATA_PAR, IterVarType.COMM_REDUCE} <= kinds:
            raise ScheduleError(
                "rfactor",
                "mixed-loop",
                f"loop `{outer.loop_var.name}` is bound to both data-parallel and reduction "
                f"iterators of block `{realize.block.name_hint}`",
                func=sch.func,
                culprits=(outer, realize.block),
                hint="split the loop so that each part feeds one kind of iterator",
            )


def _single_block(sch: Schedule, loop: For) -> BlockRealize:
    realizes = [n for n, _ in walk_with_ancestors(loop.body) if isinstance(n, BlockRealize)]
    if len(realizes) != 1:
        raise ScheduleError(
            "rfactor",
            "single-block",
            f"loop `{loop.loop_var.name}` must contain exactly one block, found "
            f"{[r.block.name_hint for r in realizes]}",
            func=sch.func,
            culprits=(loop,),
        )
    return realizes[0]


def _reducer(sch: Schedule, loop: For, block: Block) -> _Reducer:
    def fail(message: str) -> ScheduleError:
        return ScheduleError(
            "rfactor",
            "reducer",
            message,
            func=sch.func,
            culprits=(loop, block),
            hint="the block must be `C[...] = C[...] op rhs` with `op` one of "
            "+, *, min, max and an init of the identity of `op`",
        )

    init, body = block.init, block.body
    if not isinstance(init, BufferStore) or not isinstance(body, BufferStore):
        raise fail(
            f"block `{block.name_hint}` is not a reduction block with one init and one update store"
        )
    value = body.value
    if not isinstance(value, Add | Mul | Min | Max) or init.buffer is not body.buffer:
        raise fail(
            f"the update of block `{block.name_hint}` is not a reduction by +, *, min or max"
        )
    load_first = _is_self_load(value.a, body)
    if not load_first and not _is_self_load(value.b, body):
        raise fail(
            f"the update of block `{block.name_hint}` does not combine `{body.buffer.name}` "
            "with a new value"
        )
    if not _same_indices(init.indices, body.indices):
        raise fail("the init and the update store to different elements")
    identity = _IDENTITY.get(type(value))
    if identity is not None and not _is_const(init.value, identity):
        raise fail(f"the init value {init.value} is not the identity {identity} of the combiner")
    rhs = value.b if load_first else value.a
    return _Reducer(type(value), body.buffer, body.indices, init.value, rhs, load_first)


def _is_self_load(expr: PrimExpr, store: BufferStore) -> bool:
    return (
        isinstance(expr, BufferLoad)
        and expr.buffer is store.buffer
        and _same_indices(expr.indices, store.indices)
    )


def _same_indices(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    return len(a) == len(b) and all(
        structural_equal(x, y, map_free_vars=False) for x, y in zip(a, b, strict=True)
    )


def _is_const(expr: PrimExpr, value: int) -> bool:
    return isinstance(expr, IntImm | FloatImm) and expr.value == value


def _check_loop_binding(sch: Schedule, loop: For, realize: BlockRealize) -> None:
    used_by_reduction = False
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        if not mentions_var(value, loop.loop_var):
            continue
        if iv.iter_type is not IterVarType.COMM_REDUCE:
            raise ScheduleError(
                "rfactor",
                "not-reduction-loop",
                f"loop `{loop.loop_var.name}` is bound to the data-parallel iterator "
                f"`{iv.var.name}`; only a reduction loop can be factored",
                func=sch.func,
                culprits=(loop, realize.block),
            )
        used_by_reduction = True
    if not used_by_reduction:
        raise ScheduleError(
            "rfactor",
            "not-reduction-loop",
            f"loop `{loop.loop_var.name}` is not bound to any reduction iterator of "
            f"block `{realize.block.name_hint}`",
            func=sch.func,
            culprits=(loop, realize.block),
        )
    if not builders.is_const_int(loop.min, 0):
        raise ScheduleError(
            "rfactor",
            "loop-min",
            f"loop `{loop.loop_var.name}` must start at 0",
            func=sch.func,
            culprits=(loop,),
        )


def _with_axis(indices: tuple[PrimExpr, ...], axis: int, index: PrimExpr) -> tuple[PrimExpr, ...]:
    items = list(indices)
    items.insert(axis, index)
    return tuple(items)


def _finish(block: Block) -> Block:
    reads, writes = infer_access_regions(block)
    return with_changes(block, reads=reads, writes=writes)


def _rf_block(
    realize: BlockRealize,
    reducer: _Reducer,
    loop: For,
    loops: list[For],
    rf_buffer: Buffer,
    axis: int,
    name: str,
) -> BlockRealize:
    """Block `name` (`<name>_rf`): the partial reduction per value of the factored loop, in the
    original loops."""
    block = realize.block
    extra = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    iter_vars = [IterVar(Range(loop.min, loop.extent), extra, IterVarType.DATA_PAR)]
    values: list[PrimExpr] = [loop.loop_var]
    loop_to_iter: dict[Var, PrimExpr] = {loop.loop_var: extra}
    var_map: dict[Var, PrimExpr] = {}
    by_var = {outer.loop_var: outer for outer in loops}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.iter_type is IterVarType.DATA_PAR or not mentions_var(value, loop.loop_var):
            new_var = Var(iv.var.name, iv.var.dtype)
            iter_vars.append(IterVar(iv.dom, new_var, iv.iter_type))
            values.append(value)
            var_map[iv.var] = new_var
            continue
        # A reduction iterator over the factored loop: one iterator per loop in its binding.
        for outer in loops:
            if (
                outer.loop_var in by_var
                and mentions_var(value, outer.loop_var)
                and outer.loop_var not in loop_to_iter
            ):
                new_var = Var(f"v{outer.loop_var.name}", outer.loop_var.dtype)
                iter_vars.append(
                    IterVar(Range(outer.min, outer.extent), new_var, IterVarType.COMM_REDUCE)
                )
                values.append(outer.loop_var)
                loop_to_iter[outer.loop_var] = new_var
        var_map[iv.var] = substitute(value, loop_to_iter)
    indices = _with_axis(tuple(substitute(i, var_map) for i in reducer.indices), axis, extra)
    load = BufferLoad(rf_buffer, indices)
    body = BufferStore(rf_buffer, reducer.combine(load, substitute(reducer.rhs, var_map)), indices)
    init = BufferStore(rf_buffer, substitute(reducer.init, var_map), indices)
    new_block = Block(tuple(iter_vars), (), (), name, body, init, annotations=block.annotations)
    return BlockRealize(tuple(values), realize.predicate, _finish(new_block))


def _write_back_values(realize: BlockRealize, loop: For) -> list[PrimExpr]:
    """The write-back block's bindings: the factored loop, then the data-parallel bindings."""
    pairs = zip(realize.block.iter_vars, realize.iter_values, strict=True)
    return [loop.loop_var, *(v for iv, v in pairs if iv.iter_type is IterVarType.DATA_PAR)]


def _write_back_predicate(
    sch: Schedule, realize: BlockRealize, loop: For, own: list[For]
) -> PrimExpr:
    """The predicate that selects exactly the `<C>_rf` slots the rfactor block initialised."""
    values = _write_back_values(realize, loop)
    dropped = [o for o in own if not any(mentions_var(v, o.loop_var) for v in values)]
    watched = [*dropped, loop]
    analyzer = Analyzer()
    for outer in own:
        analyzer.bind(outer.loop_var, Range(outer.min, outer.extent))
    kept: PrimExpr = builders.const(True)
    for conjunct in builders.conjuncts(realize.predicate):
        moving = [o for o in watched if mentions_var(conjunct, o.loop_var)]
        if moving and not _non_increasing_truth(analyzer, conjunct, moving):
            raise ScheduleError(
                "rfactor",
                "predicate",
                f"cannot tell which partial results the predicate `{conjunct}` of block "
                f"`{realize.block.name_hint}` leaves uninitialised",
                func=sch.func,
                culprits=(loop, realize.block),
                hint="rfactor accepts predicates `f < c` with `f` non-decreasing in the "
                "reduction loops, as `split` makes them",
            )
        at_min = substitute(conjunct, {o.loop_var: o.min for o in dropped})
        kept = builders.logical_and(kept, at_min)
    return Analyzer().simplify(kept)


def _non_increasing_truth(analyzer: Analyzer, conjunct: PrimExpr, moving: list[For]) -> bool:
    """Whether `conjunct` can only turn false as any loop of `moving` grows (so it holds at the
    loops' minimum whenever it holds at all, and the minimum is the first iteration run)."""
    if isinstance(conjunct, LT | LE):
        grows = conjunct.a - conjunct.b
    elif isinstance(conjunct, GT | GE):
        grows = conjunct.b - conjunct.a
    else:
        return False
    for outer in moving:
        step = substitute(grows, {outer.loop_var: outer.loop_var + 1}) - grows
        if not analyzer.can_prove(step >= 0):
            return False
    return True


def _write_back(
    realize: BlockRealize,
    reducer: _Reducer,
    loop: For,
    own: list[For],
    rf_buffer: Buffer,
    axis: int,
    predicate: PrimExpr,
) -> Stmt:
    """The original block, now reducing `<C>_rf` over the factored loop, in copies of its own
    loops that it needs (the shared loops around it stay as they are)."""
    block = realize.block
    extra = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    iter_vars = [IterVar(Range(loop.min, loop.extent), extra, IterVarType.COMM_REDUCE)]
    values = _write_back_values(realize, loop)
    var_map: dict[Var, PrimExpr] = {}
    for iv in block.iter_vars:
        if iv.iter_type is IterVarType.DATA_PAR:
            new_var = Var(iv.var.name, iv.var.dtype)
            iter_vars.append(IterVar(iv.dom, new_var, iv.iter_type))
            var_map[iv.var] = new_var
    indices = tuple(substitute(i, var_map) for i in reducer.indices)
    partial = BufferLoad(rf_buffer, _with_axis(indices, axis, extra))
    body = BufferStore(
        reducer.buffer, reducer.combine(BufferLoad(reducer.buffer, indices), partial), indices
    )
    init = BufferStore(reducer.buffer, substitute(reducer.init, var_map), indices)
    new_block = _finish(
        Block(tuple(iter_vars), (), (), block.name_hint, body, init, annotations=block.annotations)
    )
    kept = [outer for outer in own if any(mentions_var(v, outer.loop_var) for v in values)]
    copies = {outer.loop_var: Var(outer.loop_var.name, outer.loop_var.dtype) for outer in kept}
    stmt: Stmt = BlockRealize(tuple(values), predicate, new_block)
    for outer in reversed(kept):
        stmt = For(
            outer.loop_var,
            outer.min,
            outer.extent,
            outer.kind,
            stmt,
            outer.thread_binding,
            outer.annotations,
        )
    return substitute(stmt, copies)
