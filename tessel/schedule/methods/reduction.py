"""Schedule methods: decompose_reduction, rfactor, blockize, tensorize, add_unit_loop, sampling, block queries."""

from __future__ import annotations


class ReductionMethods:
    """Mixed into Schedule: decompose_reduction, rfactor, blockize, tensorize, add_unit_loop, sampling, block queries."""
