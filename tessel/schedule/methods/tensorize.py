"""Schedule methods: tensorize (with the tensor intrinsic registry)."""

from __future__ import annotations


class TensorizeMethods:
    """Mixed into Schedule: tensorize."""
