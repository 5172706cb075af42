"""Schedule methods: cache_read, cache_write, reindex, set_scope, storage_align."""

from __future__ import annotations


class CacheMethods:
    """Mixed into Schedule: cache_read, cache_write, reindex, set_scope, storage_align."""
