"""cache_read and cache_write: stage a buffer through a new buffer in another storage scope.

Placement follows TVM (CacheLocDetector): a cache of a buffer written in the scope goes right
before the writer's first consumer, in the lowest sequence holding both; a cache of a scope
input goes first in the scope; a write cache without consumers goes last. The cache buffer
has the original's shape (TVM's original behaviour; TVM now compacts caches under non-root
scopes, Tessel leaves that to a later CompactBufferAllocation pass) and is allocated in the
scope block. Where the writer leaves points of the copied box unwritten (padding that
transform_layout left `T.undef()`), the copy skips them under `T.where`: it would read memory
nothing wrote (fuzz seed 0, 72). A cache of an input copies the scope's declared read region,
which may reach outside the buffer (a guarded padding read, after blockize); the copy skips
the points it cannot prove inside under `T.where` (fuzz seed 1, 927).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.state import replace_in, replace_stmt
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer, BufferRegion
from tessel.tir.function import PrimFunc

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def cache_read(sch: Schedule, rv: BlockRV, index: int, scope: str) -> tuple[PrimFunc, str]:
    """The function with `rv`'s `index`-th read buffer copied into a `scope` cache first, every
    consumer in the scope reading the cache; and the copy block's name."""
    realize, scope_block = S.block_and_scope(sch, "cache_read", rv)
    buffer = S.nth_buffer(sch, "cache_read", realize.block, "read", index)
    S.check_scope_name(sch, "cache_read", scope, realize.block)
    kids = S.children(scope_block)
    writer = only_writer(sch, "cache_read", kids, buffer)
    if writer is not None and writer.realize is realize:
        raise ScheduleError(
            "cache_read",
            "reads-own-output",
            f"block `{rv.name}` writes `{buffer.name}` as well as reading it; "
            "a read cache would hide its own updates",
            func=sch.func,
            culprits=(realize.block,),
            hint="use cache_write",
        )
    known = None
    if writer is None:
        consumers = [k for k in kids if k.reads(buffer)]
        where = S.Insertion(scope_block, scope_block.body)
        region = _input_region(scope_block, buffer)
        known = {iv.var: iv.dom for iv in scope_block.iter_vars}  # what the region mentions
    else:
        consumers = consumers_after(kids, writer, buffer)
        if not any(k.realize is realize for k in consumers):
            raise ScheduleError(
                "cache_read",
                "read-before-write",
                f"block `{rv.name}` reads `{buffer.name}` before its writer "
                f"`{writer.realize.block.name_hint}` runs",
                func=sch.func,
                culprits=(realize.block,),
            )
        where = S.between(writer, consumers[0])
        region = _relaxed_write(writer, buffer, where)
    skip = None if writer is None else S.unwritten(writer.realize, buffer)
    name = S.scoped_name(buffer, scope)
    block_name = S.fresh_block_name(sch.func, name)
    cache = S.cache_buffer(buffer, S.fresh_buffer_name(sch.func, name), scope)
    stage = S.copy_stage(block_name, region, buffer, cache, skip, known)
    new_scope = S.insert(scope_block, where, stage)
    for consumer in consumers:
        redirected = S.replace_buffer(consumer.realize, buffer, cache)
        new_scope = replace_in(new_scope, consumer.realize, redirected)
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, cache)), block_name


def cache_write(sch: Schedule, rv: BlockRV, index: int, scope: str) -> tuple[PrimFunc, str]:
    """The function with `rv` writing its `index`-th write buffer into a `scope` cache, and a
    block copying the cache back before the first consumer; and the copy block's name."""
    realize, scope_block = S.block_and_scope(sch, "cache_write", rv)
    buffer = S.nth_buffer(sch, "cache_write", realize.block, "write", index)
    S.check_scope_name(sch, "cache_write", scope, realize.block)
    kids = S.children(scope_block)
    writer = only_writer(sch, "cache_write", kids, buffer)
    assert writer is not None  # the block writes the buffer
    assert writer.realize is realize
    check_reads_old_value(sch, "cache_write", realize, buffer)
    consumers = consumers_after(kids, writer, buffer)
    if consumers:
        where = S.between(writer, consumers[0])
    else:
        where = S.Insertion(scope_block, scope_block.body, after=True)
    region = _relaxed_write(writer, buffer, where)
    name = S.scoped_name(buffer, scope)
    block_name = S.fresh_block_name(sch.func, name)
    cache = S.cache_buffer(buffer, S.fresh_buffer_name(sch.func, name), scope)
    stage = S.copy_stage(block_name, region, cache, buffer, S.unwritten(realize, buffer))
    new_scope = S.insert(scope_block, where, stage)
    new_scope = replace_in(new_scope, realize, S.replace_buffer(realize, buffer, cache))
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, cache)), block_name


def only_writer(
    sch: Schedule, primitive: str, kids: list[S.Child], buffer: Buffer
) -> S.Child | None:
    """The one block of the scope writing `buffer` (None if none; ScheduleError if several)."""
    writers = [k for k in kids if k.writes(buffer)]
    if len(writers) > 1:
        names = [w.realize.block.name_hint for w in writers]
        raise ScheduleError(
            primitive,
            "single-writer",
            f"`{buffer.name}` is written by several blocks {names} in this scope; "
            "a cache needs exactly one producer",
            func=sch.func,
            culprits=[w.realize.block for w in writers],
        )
    return writers[0] if writers else None


def check_reads_old_value(
    sch: Schedule, primitive: str, realize: BlockRealize, buffer: Buffer
) -> None:
    """A write cache starts empty: refuse a block without init that reads the old value of the
    buffer it updates."""
    if realize.block.init is None and any(r.buffer is buffer for r in realize.block.reads):
        # An update (a decomposed reduction's, say) reads the values written before it, which
        # a fresh cache would not hold (fuzz campaign 10, case 6104: after blockize, the init
        # outside the update's scope).
        raise ScheduleError(
            primitive,
            "reads-old-value",
            f"block `{realize.block.name_hint}` reads the old value of "
            f"`{buffer.name}` it updates; a write cache would start without it",
            func=sch.func,
            culprits=(realize.block,),
            hint="cache the block that writes it first, or the whole reduction "
            "before decompose_reduction",
        )


def consumers_after(kids: list[S.Child], writer: S.Child, buffer: Buffer) -> list[S.Child]:
    """The blocks after `writer` that read `buffer` (its read-after-write dependents)."""
    position = kids.index(writer)
    return [k for k in kids[position + 1 :] if k.reads(buffer)]


def _input_region(scope: Block, buffer: Buffer) -> tuple:
    """What the scope reads of an input buffer: its declared read region, else everything."""
    declared = next((r for r in scope.reads if r.buffer is buffer), None)
    return (declared or BufferRegion.full(buffer)).region


def _relaxed_write(writer: S.Child, buffer: Buffer, where: S.Insertion) -> tuple:
    """The writer's write region of `buffer`, over every iteration under the insertion point."""
    realize: BlockRealize = writer.realize
    region = next(r for r in realize.block.writes if r.buffer is buffer)
    below, above = S.split_loops(writer, where)
    return S.relaxed_region(region, realize, below, above)
