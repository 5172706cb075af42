"""Schedule methods: cache_read, cache_write, reindex, reindex_cache_read, reindex_cache_write,
set_scope, storage_align."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives.cache import cache_read, cache_write
from tessel.schedule.primitives.reindex import reindex
from tessel.schedule.primitives.reindex_cache import reindex_cache_read, reindex_cache_write
from tessel.schedule.primitives.storage import set_scope, storage_align
from tessel.schedule.recording import recorded, recorded_as
from tessel.support.errors import UserError
from tessel.tir.index_map import IndexMap

if TYPE_CHECKING:
    from tessel.tir.function import PrimFunc


class CacheMethods:
    """Mixed into Schedule: cache_read, cache_write, reindex, reindex_cache_read,
    reindex_cache_write, set_scope, storage_align."""

    _func: PrimFunc

    @recorded
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Copy the block's `read_buffer_index`-th read buffer into a new `storage_scope` buffer
        before its first consumer; the consumers read the copy. Returns the copy block."""
        # self is a Schedule
        self._func, name = cache_read(self, block, read_buffer_index, storage_scope)  # type: ignore[arg-type]
        return BlockRV(name)

    @recorded
    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Make the block write its `write_buffer_index`-th write buffer into a new
        `storage_scope` buffer, copied back after it. Returns the copy block."""
        # self is a Schedule
        self._func, name = cache_write(self, block, write_buffer_index, storage_scope)  # type: ignore[arg-type]
        return BlockRV(name)

    @recorded
    def reindex(self, block: BlockRV, buffer_index: tuple[str, int]) -> BlockRV:
        """Stage the access `("read" | "write", index)` through a buffer laid out like the
        block's iterators. Returns the copy block."""
        # self is a Schedule
        self._func, name = reindex(self, block, buffer_index)  # type: ignore[arg-type]
        return BlockRV(name)

    def reindex_cache_read(
        self, block: BlockRV | str, read_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        """Copy the block's `read_buffer_index`-th read buffer, right before the block, into a
        `storage_scope` cache indexed by `index_map` of the block's iterators; the block reads
        the cache. Returns the copy block."""
        imap = self._iterator_map("reindex_cache_read", block, index_map)
        return self._reindex_cache_read(block, read_buffer_index, storage_scope, imap)

    def reindex_cache_write(
        self, block: BlockRV | str, write_buffer_index: int, storage_scope: str, index_map: Any
    ) -> BlockRV:
        """Make the block write its `write_buffer_index`-th write buffer into a `storage_scope`
        cache indexed by `index_map` of its iterators, copied back after it. Returns the copy
        block."""
        imap = self._iterator_map("reindex_cache_write", block, index_map)
        return self._reindex_cache_write(block, write_buffer_index, storage_scope, imap)

    def _iterator_map(self, primitive: str, block: BlockRV | str, index_map: Any) -> IndexMap:
        """`index_map` over the block's iterators (a `*args` lambda gets one per iterator)."""
        # self is a Schedule
        iter_vars = self.block(block, primitive).block.iter_vars  # type: ignore[attr-defined]
        dtype = str(iter_vars[0].var.dtype) if iter_vars else "int32"
        try:
            if isinstance(index_map, IndexMap):
                return index_map.with_index_dtype(dtype)
            return IndexMap.from_func(index_map, ndim=len(iter_vars), index_dtype=dtype)
        except (UserError, TypeError) as err:
            raise ScheduleError(
                primitive,
                "index-map",
                f"cannot build the index map over the "
                f"{len(iter_vars)} iterators of the block: {err}",
                func=self._func,
            ) from err

    @recorded_as("reindex_cache_read")
    def _reindex_cache_read(
        self, block: BlockRV, read_buffer_index: int, storage_scope: str, index_map: IndexMap
    ) -> BlockRV:
        self._func, name = reindex_cache_read(
            self,
            block,
            read_buffer_index,
            storage_scope,
            index_map,
        )
        return BlockRV(name)

    @recorded_as("reindex_cache_write")
    def _reindex_cache_write(
        self, block: BlockRV, write_buffer_index: int, storage_scope: str, index_map: IndexMap
    ) -> BlockRV:
        self._func, name = reindex_cache_write(
            self,
            block,
            write_buffer_index,
            storage_scope,
            index_map,
        )
        return BlockRV(name)

    @recorded
    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Move the block's `buffer_index`-th write buffer (allocated in a block) to a scope."""
        # self is a Schedule
        self._func = set_scope(self, block, buffer_index, storage_scope)  # type: ignore[arg-type]

    @recorded
    def storage_align(
        self, block: BlockRV, buffer_index: int, axis: int, factor: int, offset: int
    ) -> None:
        """Ask for the `axis` stride of the block's `buffer_index`-th write buffer to be
        `factor * k + offset` (annotation `buffer_dim_align`; recorded, not yet lowered)."""
        # self is a Schedule
        self._func = storage_align(self, block, buffer_index, axis, factor, offset)  # type: ignore[arg-type]
