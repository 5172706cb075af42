"""rfactor: a reduction split in two along one of its loops (TVM's semantics).

The loop `r` becomes a data-parallel dimension of a new buffer `<C>_rf`, computed by the block
`<name>_rf` (the original loops, partial results per `r`); the original block keeps its name and
becomes the write-back block, which reduces `<C>_rf` over `r` in copies of the loops it needs,
placed after the original loop nest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tessel.ir import builders
from tessel.ir.expr import Add, FloatImm, IntImm, Max, Min, Mul, PrimExpr, Range, Var
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.primitives.block_queries import mentions_var
from tessel.schedule.state import find_block_realize, replace_stmt, walk_with_ancestors
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
    axis = factor_axis % (ndim + 1)
    located = find_block_realize(sch.func, block.name_hint)
    assert located is not None
    loops = located.enclosing_loops()
    scope = located.parent_block()
    assert scope is not None
    shape = list(reducer.buffer.shape)
    shape.insert(axis, loop.extent)
    rf_buffer = decl_buffer(tuple(shape), reducer.buffer.dtype, f"{reducer.buffer.name}_rf")
    rf_realize = _rf_block(realize, reducer, loop, loops, rf_buffer, axis)
    wb_nest = _write_back(realize, reducer, loop, loops, rf_buffer, axis)
    func = replace_stmt(sch.func, realize, rf_realize)
    top = _refind_loop(func, loops[0])
    func = replace_stmt(func, top, SeqStmt((top, wb_nest)))
    scope_realize = find_block_realize(func, scope.name_hint)
    assert scope_realize is not None
    assert isinstance(scope_realize.node, BlockRealize)
    old_scope = scope_realize.node.block
    new_scope = with_changes(old_scope, alloc_buffers=(*old_scope.alloc_buffers, rf_buffer))
    return replace_stmt(func, old_scope, new_scope), rf_realize.block.name_hint


def _refind_loop(func: PrimFunc, loop: For) -> For:
    for node, _ in walk_with_ancestors(func.body):
        if isinstance(node, For) and node.loop_var is loop.loop_var:
            return node
    raise AssertionError("the loop nest vanished")


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
) -> BlockRealize:
    """`<name>_rf`: the partial reduction per value of the factored loop, in the original loops."""
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
    new_block = Block(
        tuple(iter_vars), (), (), f"{block.name_hint}_rf", body, init, annotations=block.annotations
    )
    return BlockRealize(tuple(values), realize.predicate, _finish(new_block))


def _write_back(
    realize: BlockRealize,
    reducer: _Reducer,
    loop: For,
    loops: list[For],
    rf_buffer: Buffer,
    axis: int,
) -> Stmt:
    """The original block, now reducing `<C>_rf` over the factored loop, in copies of its loops."""
    block = realize.block
    extra = Var(f"v{loop.loop_var.name}", loop.loop_var.dtype)
    iter_vars = [IterVar(Range(loop.min, loop.extent), extra, IterVarType.COMM_REDUCE)]
    values: list[PrimExpr] = [loop.loop_var]
    var_map: dict[Var, PrimExpr] = {}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if iv.iter_type is IterVarType.DATA_PAR:
            new_var = Var(iv.var.name, iv.var.dtype)
            iter_vars.append(IterVar(iv.dom, new_var, iv.iter_type))
            values.append(value)
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
    kept = [outer for outer in loops if any(mentions_var(v, outer.loop_var) for v in values)]
    copies = {outer.loop_var: Var(outer.loop_var.name, outer.loop_var.dtype) for outer in kept}
    stmt: Stmt = BlockRealize(tuple(values), builders.const(True), new_block)
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
