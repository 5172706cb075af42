"""pad_einsum: compute a block over a padded iteration domain, so tiles divide it (TVM's
`Schedule.pad_einsum`; the padding RFC 77 argues for, applied to the spatial iterators).

For a block in a plain loop nest (each loop binds one iterator, in order, from 0 over its
domain), each spatial iterator's extent is rounded up to a multiple of its padding factor
(127 -> 128 for a factor of 8 or 16). The block then writes a padded buffer `<out>_pad`, copied
to the output by a new block `<out>_unpad` after the nest (which a schedule may move under a
tile: its guard is the only one left). A read that would leave its buffer over the padded
domain is redirected to a zero-padded copy `<in>_pad` made by a new block `<in>_pad` before the
nest; a read that stays inside (a weight already packed with padding by transform_layout) is
left as it is. The extra iterations compute values nobody reads, so padding spatial iterators
never changes the results; padding a reduction iterator would, and is refused.

Differences from TVM: TVM pads reduction iterators too (sound for a sum of products with
zero-padded operands only), and copies every input; Tessel pads spatial iterators only and
copies an input only when the padded domain would read outside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.state import replace_in, replace_stmt
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.builtin import if_then_else
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

_NAME = "pad_einsum"


def pad_einsum(sch: Schedule, rv: BlockRV, padding: Sequence[int]) -> PrimFunc:
    """The function with `rv`'s spatial iterators padded to multiples of `padding` (one factor
    per block iterator; 1 leaves an iterator as it is)."""
    realize, scope = S.block_and_scope(sch, _NAME, rv)
    block = realize.block
    nest = _plain_nest(sch, scope, realize)
    extents = _padded_extents(sch, block, padding)
    if all(new == _extent(iv) for iv, new in zip(block.iter_vars, extents, strict=True)):
        return sch.func
    if len(block.writes) != 1:
        raise _error(
            sch,
            block,
            "one-output",
            f"block `{block.name_hint}` writes {len(block.writes)} buffers; pad_einsum "
            "pads a block with one output",
        )
    domain = {iv.var: e for iv, e in zip(block.iter_vars, extents, strict=True)}
    output = block.writes[0].buffer
    output_pad = _padded_buffer(sch, block, output, domain, "output")
    _check_output(sch, scope, realize, output, extents)
    mapping = {output: output_pad}
    copies: list[Stmt] = []
    for region in block.reads:
        source = region.buffer
        if source is output or source in mapping or _stays_inside(block, source, domain):
            continue
        _check_input(sch, scope, block, source)
        padded = _padded_buffer(sch, block, source, domain, "read")
        mapping[source] = padded
        copies.append(_pad_copy(sch.func, source, padded))
    padded_block = _pad_block(block, extents, mapping)
    padded_nest = _pad_loops(nest, realize, padded_block, extents)
    unpad = _copy(S.fresh_block_name(sch.func, f"{output.name}_unpad"), output_pad, output)
    new_scope = _replace_nest(scope, nest, [*copies, padded_nest, unpad])
    for buffer in mapping.values():
        new_scope = S.add_alloc(new_scope, buffer)
    return replace_stmt(sch.func, scope, new_scope)


def _error(sch: Schedule, block: Block, rule: str, message: str) -> ScheduleError:
    return ScheduleError(_NAME, rule, message, func=sch.func, culprits=(block,))


def _extent(iv: IterVar) -> int:
    return iv.dom.extent.value  # type: ignore[attr-defined]  # checked constant by _plain_nest


def _plain_nest(sch: Schedule, scope: Block, realize: BlockRealize) -> For:
    """The outermost loop of the block's nest, checked to be plain: loop k binds iterator k,
    from 0 over the iterator's constant domain, each loop's body the next loop or the block."""
    block = realize.block
    kids = S.children(scope)
    child = S.child_named(kids, realize)
    loops = child.loops()
    values = realize.iter_values
    plain = (
        len(loops) == len(block.iter_vars) > 0
        and builders.is_const_int(realize.predicate, 1)
        and all(v is loop.loop_var for v, loop in zip(values, loops, strict=True))
        and all(
            isinstance(iv.dom.extent, IntImm) and builders.is_const_int(iv.dom.min, 0)
            for iv in block.iter_vars
        )
        and all(
            builders.is_const_int(loop.min, 0) and builders.is_const_int(loop.extent, _extent(iv))
            for loop, iv in zip(loops, block.iter_vars, strict=True)
        )
        and all(
            outer.body is inner for outer, inner in zip(loops, [*loops[1:], realize], strict=True)
        )
    )
    if not plain:
        raise _error(
            sch,
            block,
            "plain-nest",
            f"block `{block.name_hint}` is not alone in a nest of loops binding its "
            "iterators one by one over their constant domains; pad_einsum needs the "
            "nest create_prim_func builds (pad before splitting)",
        )
    return loops[0]


def _padded_extents(sch: Schedule, block: Block, padding: Sequence[int]) -> list[int]:
    if len(padding) != len(block.iter_vars):
        raise _error(
            sch,
            block,
            "padding-count",
            f"{len(padding)} padding factors for the {len(block.iter_vars)} iterators "
            f"of block `{block.name_hint}`",
        )
    extents = []
    for iv, factor in zip(block.iter_vars, padding, strict=True):
        if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
            raise _error(
                sch,
                block,
                "padding-factor",
                f"padding factor {factor!r} for `{iv.var.name}` is not a positive int",
            )
        extent = _extent(iv)
        padded = -(-extent // factor) * factor
        if padded != extent and iv.iter_type != IterVarType.DATA_PAR:
            raise _error(
                sch,
                block,
                "reduction-padding",
                f"`{iv.var.name}` is a reduction iterator; padding it from {extent} to "
                f"{padded} would add terms to the reduction",
            )
        extents.append(padded)
    return extents


def _check_output(
    sch: Schedule, scope: Block, realize: BlockRealize, output: Buffer, extents: list[int]
) -> None:
    """The padded iterations must write only the padding of the output: each padded iterator
    indexes an axis of it; and the block must compute all of it (its own init, no other
    writer), since only the block's stores go to the padded copy."""
    block = realize.block
    indices = _accesses(block, output)[0]
    for iv, extent in zip(block.iter_vars, extents, strict=True):
        if extent != _extent(iv) and not any(index is iv.var for index in indices):
            raise _error(
                sch,
                block,
                "iterator-not-in-output",
                f"`{iv.var.name}` does not index the output `{output.name}`: its padded "
                "iterations would update the same elements again",
            )
    others = [k for k in S.children(scope) if k.writes(output) and k.realize is not realize]
    reads_output = any(r.buffer is output for r in block.reads)
    if others or (reads_output and block.init is None):
        raise _error(
            sch,
            block,
            "output-written-elsewhere",
            f"`{output.name}` is also written outside block `{block.name_hint}` (a "
            "decomposed init?); pad before decompose_reduction",
        )


def _check_input(sch: Schedule, scope: Block, block: Block, source: Buffer) -> None:
    """An input produced in the scope is copied whole: its one writer must store every element
    (a partial writer's other elements hold nothing a copy may read)."""
    writers = [k for k in S.children(scope) if k.writes(source)]
    if not writers:
        return
    full = False
    if len(writers) == 1 and builders.is_const_int(writers[0].realize.predicate, 1):
        writer = writers[0]
        region = next(r for r in writer.realize.block.writes if r.buffer is source)
        box = S.relaxed_region(region, writer.realize, writer.loops(), [])
        full = S.unwritten(writer.realize, source) is None and all(
            builders.is_const_int(r.min, 0)
            and isinstance(r.extent, IntImm)
            and isinstance(e, IntImm)
            and r.extent.value == e.value
            for r, e in zip(box, source.shape, strict=True)
        )
    if not full:
        raise _error(
            sch,
            block,
            "partial-input",
            f"`{source.name}` is not written whole by one block before `"
            f"{block.name_hint}`, so a padded copy of it would read elements nothing "
            "wrote",
        )


def _accesses(block: Block, buffer: Buffer) -> list[tuple[PrimExpr, ...]]:
    roots = [block.body] if block.init is None else [block.init, block.body]
    found = []
    for root in roots:
        for node in post_order(root):
            if isinstance(node, BufferLoad | BufferStore) and node.buffer is buffer:
                found.append(tuple(node.indices))
            if isinstance(node, BlockRealize):
                found.append(())  # an inner block: its accesses are in its own iterators
    return found


def _stays_inside(block: Block, buffer: Buffer, domain: dict[Var, int]) -> bool:
    """Whether every access of `buffer` lies inside it over the padded domain."""
    analyzer = Analyzer()
    for var, extent in domain.items():
        analyzer.bind(var, Range(builders.const(0, var.dtype), builders.const(extent, var.dtype)))
    for indices in _accesses(block, buffer):
        if len(indices) != len(buffer.shape):
            return False
        for index, extent in zip(indices, buffer.shape, strict=True):
            if not (
                analyzer.can_prove(builders.le(builders.const(0, index.dtype), index))
                and analyzer.can_prove(builders.lt(index, extent))
            ):
                return False
    return True


def _padded_buffer(
    sch: Schedule, block: Block, buffer: Buffer, domain: dict[Var, int], role: str
) -> Buffer:
    """A buffer shaped like `buffer`, each axis indexed by a padded iterator grown to that
    iterator's padded extent; every access must index it by iterators or constants alone."""
    accesses = _accesses(block, buffer)
    first = accesses[0]
    einsum = all(i in domain or isinstance(i, IntImm) for i in first) and all(
        len(a) == len(first)
        and all(
            x is y or (isinstance(x, IntImm) and builders.is_const_int(y, x.value))
            for x, y in zip(a, first, strict=True)
        )
        for a in accesses
    )
    if not einsum or len(first) != len(buffer.shape):
        raise _error(
            sch,
            block,
            "not-einsum",
            f"the {role} `{buffer.name}` is accessed as {_show(accesses)}: pad_einsum "
            "pads buffers indexed by the block's iterators or constants alone, the same "
            "way in every access",
        )
    shape = []
    for index, extent in zip(first, buffer.shape, strict=True):
        grown = domain.get(index) if isinstance(index, Var) else None
        if grown is not None and isinstance(extent, IntImm) and grown > extent.value:
            shape.append(builders.const(grown, extent.dtype))
        else:
            shape.append(extent)
    name = S.fresh_buffer_name(sch.func, f"{buffer.name}_pad")
    padded = S.cache_buffer(buffer, name, "global")
    return with_changes(padded, shape=tuple(shape))


def _show(accesses: list[tuple[PrimExpr, ...]]) -> str:
    return ", ".join("[" + ", ".join(str(i) for i in a) + "]" for a in accesses)


def _pad_copy(func: PrimFunc, source: Buffer, padded: Buffer) -> Stmt:
    """Loops over `padded` storing `source` where it exists, 0 in the padding."""
    return _copy(S.fresh_block_name(func, padded.name), source, padded)


def _copy(name: str, source: Buffer, target: Buffer) -> Stmt:
    """A nest over `target`'s shape copying `source` into it; where `target` is the larger,
    0 outside `source` (the padding), where it is the smaller, the part of `source` it holds."""
    shape = target.shape
    loop_vars = [Var(f"ax{k}", e.dtype) for k, e in enumerate(shape)]
    iters = tuple(
        IterVar(Range(builders.const(0, e.dtype), e), Var(f"v{k}", e.dtype), IterVarType.DATA_PAR)
        for k, e in enumerate(shape)
    )
    indices = tuple(iv.var for iv in iters)
    inside = builders.conjunction(
        [
            builders.lt(i, e)
            for i, e, p in zip(indices, source.shape, shape, strict=True)
            if p is not e and _larger(p, e)
        ]
    )
    value: PrimExpr = BufferLoad(source, indices)
    if not builders.is_const_int(inside, 1):
        value = if_then_else(inside, value, builders.const(0, source.dtype))
    body = BufferStore(target, value, indices)
    block = Block(
        iters, (S.point_region(source, indices),), (S.point_region(target, indices),), name, body
    )
    stmt: Stmt = BlockRealize(tuple(loop_vars), builders.const(True, "bool"), block)
    for var, extent in reversed(list(zip(loop_vars, shape, strict=True))):
        stmt = For(var, builders.const(0, var.dtype), extent, ForKind.SERIAL, stmt)
    return stmt


def _larger(a: PrimExpr, b: PrimExpr) -> bool:
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value > b.value


def _pad_block(block: Block, extents: list[int], mapping: dict[Buffer, Buffer]) -> Block:
    iter_vars = tuple(
        with_changes(iv, dom=Range(iv.dom.min, builders.const(e, iv.dom.extent.dtype)))
        for iv, e in zip(block.iter_vars, extents, strict=True)
    )
    redirected = S.BufferReplacer(mapping).visit(block)
    assert isinstance(redirected, Block)
    return with_changes(redirected, iter_vars=iter_vars)


def _pad_loops(top: For, realize: BlockRealize, block: Block, extents: list[int]) -> Stmt:
    loops = []
    node: Stmt = top
    while isinstance(node, For):
        loops.append(node)
        node = node.body
    stmt: Stmt = with_changes(realize, block=block)
    for loop, extent in reversed(list(zip(loops, extents, strict=True))):
        stmt = with_changes(loop, extent=builders.const(extent, loop.extent.dtype), body=stmt)
    return stmt


def _replace_nest(scope: Block, nest: Stmt, stmts: list[Stmt]) -> Block:
    """`scope` with `nest` replaced by `stmts`, spliced into its sequence if it is in one."""
    parent = next(
        (n for n in post_order(scope) if isinstance(n, SeqStmt) and any(s is nest for s in n.seq)),
        None,
    )
    if parent is None:
        # a Block scope stays a Block
        return replace_in(scope, nest, SeqStmt.flatten(stmts))  # type: ignore[return-value]
    items: list[Stmt] = []
    for item in parent.seq:
        items.extend(stmts if item is nest else [item])
    return replace_in(scope, parent, SeqStmt(tuple(items)))  # type: ignore[return-value]  # a Block
