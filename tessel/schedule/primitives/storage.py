"""set_scope and storage_align: where an allocated buffer lives and how its rows are padded.

`storage_align` records TVM's block annotation `buffer_dim_align` (a list of
`[buffer_index, axis, factor, offset]`) on the block that writes the buffer. TVM honours it
where the buffer's allocation is compacted (CompactBufferAllocation sets the strides); Tessel's
CompactBufferAllocation does not apply it yet, so the annotation changes nothing in the generated
code, and LowerOpaqueBlock drops it with the other block annotations, recording why in the
function attribute `lowering.dropped_annotations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.ir.expr import Var
from tessel.ir.node import with_changes
from tessel.ir.type import PointerType
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.state import replace_stmt
from tessel.support.dtype import handle
from tessel.support.frozen_map import FrozenMap, freeze
from tessel.tir.block import Block
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

DIM_ALIGN = "buffer_dim_align"


def set_scope(sch: Schedule, rv: BlockRV, buffer_index: int, storage_scope: str) -> PrimFunc:
    """The function with the `buffer_index`-th buffer `rv` writes moved to `storage_scope`."""
    block = sch.block(rv, "set_scope").block
    buffer = S.nth_buffer(sch, "set_scope", block, "write", buffer_index)
    S.check_scope_name(sch, "set_scope", storage_scope, block)
    _check_allocated(sch, "set_scope", block, buffer)
    if buffer.scope == storage_scope:
        return sch.func
    data = Var(buffer.data.name, handle, PointerType(buffer.dtype, storage_scope))
    moved = with_changes(buffer, data=data)
    # a PrimFunc stays a PrimFunc
    return S.BufferReplacer({buffer: moved}).visit(sch.func)  # type: ignore[return-value]


def storage_align(
    sch: Schedule, rv: BlockRV, buffer_index: int, axis: int, factor: int, offset: int
) -> PrimFunc:
    """The function with `rv` annotated so that the buffer's `axis` stride is padded to
    `factor * k + offset` elements (TVM's `buffer_dim_align`)."""
    block = sch.block(rv, "storage_align").block
    buffer = S.nth_buffer(sch, "storage_align", block, "write", buffer_index)
    _check_allocated(sch, "storage_align", block, buffer)
    _check_alignment(sch, block, buffer, axis, factor, offset)
    entries = [list(e) for e in block.annotations.get(DIM_ALIGN, ())]
    entries = [e for e in entries if (e[0], e[1]) != (buffer_index, axis)]
    entries.append([buffer_index, axis, factor, offset])
    annotations = dict(block.annotations)
    annotations[DIM_ALIGN] = freeze(entries)
    return replace_stmt(sch.func, block, with_changes(block, annotations=FrozenMap(annotations)))


def _check_allocated(sch: Schedule, primitive: str, block: Block, buffer: Buffer) -> None:
    if S.is_allocated(sch.func, buffer):
        return
    raise ScheduleError(
        primitive,
        "allocated-buffer",
        f"`{buffer.name}` is not allocated by a block (it is a function parameter "
        "or a match_buffer), so its storage is the caller's",
        func=sch.func,
        culprits=(block,),
        hint="cache_read / cache_write it first and change the cache",
    )


def _check_alignment(
    sch: Schedule, block: Block, buffer: Buffer, axis: Any, factor: Any, offset: Any
) -> None:
    def fail(rule: str, message: str) -> ScheduleError:
        return ScheduleError("storage_align", rule, message, func=sch.func, culprits=(block,))

    if not (isinstance(axis, int) and 0 <= axis < buffer.ndim):
        raise fail(
            "axis-range", f"axis {axis!r} is out of range for `{buffer.name}` of rank {buffer.ndim}"
        )
    if not (isinstance(factor, int) and factor > 0):
        raise fail("factor", f"factor must be a positive integer, got {factor!r}")
    if not (isinstance(offset, int) and offset >= 0):
        raise fail("offset", f"offset must be a non-negative integer, got {offset!r}")
