"""Schedule methods: compute_at, reverse_compute_at, compute_inline, reverse_compute_inline."""

from __future__ import annotations


class ComputeMethods:
    """Mixed into Schedule: compute_at, reverse_compute_at, compute_inline, reverse_compute_inline."""
