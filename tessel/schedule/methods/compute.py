"""Schedule methods: compute_at, reverse_compute_at, compute_inline, reverse_compute_inline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.primitives.compute_at import compute_at, reverse_compute_at
from tessel.schedule.primitives.inline import compute_inline, reverse_compute_inline
from tessel.schedule.recording import recorded

if TYPE_CHECKING:
    from tessel.tir.function import PrimFunc


class ComputeMethods:
    """Mixed into Schedule: compute_at, reverse_compute_at, compute_inline,
    reverse_compute_inline."""

    _func: PrimFunc

    @recorded
    def compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1
    ) -> None:
        """Move producer `block` under `loop`, computing per iteration only what the consumers
        under `loop` read in it."""
        self._func = compute_at(self, block, loop, preserve_unit_loops, index)  # type: ignore[arg-type]  # self is a Schedule

    @recorded
    def reverse_compute_at(
        self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1
    ) -> None:
        """Move consumer `block` under `loop`, consuming per iteration what the producers under
        `loop` wrote."""
        self._func = reverse_compute_at(self, block, loop, preserve_unit_loops, index)  # type: ignore[arg-type]  # self is a Schedule

    @recorded
    def compute_inline(self, block: BlockRV) -> None:
        """Inline a data-parallel producer into every read of the buffer it writes."""
        self._func = compute_inline(self, block)  # type: ignore[arg-type]  # self is a Schedule

    @recorded
    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline a data-parallel consumer into the single producer of what it reads."""
        self._func = reverse_compute_inline(self, block)  # type: ignore[arg-type]  # self is a Schedule
