"""Schedule methods: cache_read, cache_write, reindex, set_scope, storage_align."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.cache import cache_read, cache_write
from tessel.schedule.primitives.reindex import reindex
from tessel.schedule.primitives.storage import set_scope, storage_align
from tessel.schedule.recording import recorded

if TYPE_CHECKING:
    from tessel.tir.function import PrimFunc


class CacheMethods:
    """Mixed into Schedule: cache_read, cache_write, reindex, set_scope, storage_align."""

    _func: PrimFunc

    @recorded
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Copy the block's `read_buffer_index`-th read buffer into a new `storage_scope` buffer
        before its first consumer; the consumers read the copy. Returns the copy block."""
        self._func, name = cache_read(self, block, read_buffer_index, storage_scope)  # type: ignore[arg-type]
        return BlockRV(name)

    @recorded
    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make the block write its `write_buffer_index`-th write buffer into a new
        `storage_scope` buffer, copied back after it. Returns the copy block."""
        self._func, name = cache_write(self, block, write_buffer_index, storage_scope)  # type: ignore[arg-type]
        return BlockRV(name)

    @recorded
    def reindex(self, block: BlockRV, buffer_index: tuple[str, int]) -> BlockRV:
        """Stage the access `("read" | "write", index)` through a buffer laid out like the
        block's iterators. Returns the copy block."""
        self._func, name = reindex(self, block, buffer_index)  # type: ignore[arg-type]
        return BlockRV(name)

    @recorded
    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Move the block's `buffer_index`-th write buffer (allocated in a block) to a scope."""
        self._func = set_scope(self, block, buffer_index, storage_scope)  # type: ignore[arg-type]

    @recorded
    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:  # fmt: skip
        """Ask for the `axis` stride of the block's `buffer_index`-th write buffer to be
        `factor * k + offset` (annotation `buffer_dim_align`; recorded, not yet lowered)."""
        self._func = storage_align(self, block, buffer_index, axis, factor, offset)  # type: ignore[arg-type]
