"""Schedule methods: block queries, decompose_reduction, rfactor, blockize, unit loops, sampling."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.primitives import block_queries, blockize, reduction, rfactor, sampling
from tessel.schedule.recording import recorded

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule
    from tessel.tir.function import PrimFunc

F = TypeVar("F", bound=Callable[..., Any])


def _recorded_with_decision(decision_of: Callable[[Any, Any], Any]) -> Callable[[F], F]:
    """`recorded`, plus the sampled decision written into the trace so that replay reuses it."""

    def decorate(method: F) -> F:
        inner = recorded(method)

        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = inner(self, *args, **kwargs)
            self.trace.set_decision(decision_of(result, self._last_decision))
            return result

        return cast(F, run)

    return decorate


class ReductionMethods:
    """Mixed into Schedule: block queries, reductions, blockize, add_unit_loop, sampling."""

    _func: PrimFunc
    _last_decision: Any = None
    _rng: random.Random | None = None

    def _schedule(self) -> Schedule:
        return cast("Schedule", self)  # a mixin: self is always a Schedule

    # ------------------------------------------------------------------ block queries
    @recorded
    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """The blocks directly under a block or loop, in program order."""
        return block_queries.get_child_blocks(self._schedule(), block_or_loop)

    @recorded
    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks of the same scope that write what `block` reads (before it)."""
        return block_queries.get_producers(self._schedule(), block)

    @recorded
    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks of the same scope that read what `block` writes (after it)."""
        return block_queries.get_consumers(self._schedule(), block)

    # ------------------------------------------------------------------ reductions
    @recorded
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Move `block`'s init into a new block `<name>_init` placed right before `loop`."""
        self._func, name = reduction.decompose_reduction(self._schedule(), block, loop)
        return BlockRV(name)

    @recorded
    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor the reduction under `loop`: `<name>_rf` (partials per `loop`) and a write-back."""
        self._func, name = rfactor.rfactor(self._schedule(), loop, factor_axis)
        return BlockRV(name)

    @recorded
    def blockize(self, loop: LoopRV, preserve_unit_iters: bool = True) -> BlockRV:
        """Turn the loops at and under `loop`, with their one block, into a new block `<name>_o`
        (with `preserve_unit_iters`, as in TVM, loops of extent 1 stay in the bindings)."""
        self._func, name = blockize.blockize(self._schedule(), loop, preserve_unit_iters)
        return BlockRV(name)

    @recorded
    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV) -> LoopRV:
        """Wrap a loop, or a block, in a new loop of extent 1."""
        self._func, var = reduction.add_unit_loop(self._schedule(), block_or_loop)
        return LoopRV(var)

    # ------------------------------------------------------------------ sampling
    def seed(self, seed: int) -> None:
        """Reseed the random state the sampling primitives draw from (seed 0 by default)."""
        self._rng = random.Random(seed)

    def _random(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(0)
        return self._rng

    @_recorded_with_decision(lambda result, _: list(result))
    def sample_perfect_tile(
        self,
        loop: LoopRV,
        n: int,
        max_innermost_factor: int = 16,
        decision: Sequence[int] | None = None,
    ) -> list[int]:
        """`n` random factors of `loop`'s extent, the innermost at most `max_innermost_factor`."""
        sch, rng = self._schedule(), self._random()
        return sampling.sample_perfect_tile(sch, rng, loop, n, max_innermost_factor, decision)

    @_recorded_with_decision(lambda _, index: index)
    def sample_categorical(
        self, candidates: Sequence[int], probs: Sequence[float], decision: int | None = None
    ) -> int:
        """One of `candidates`, drawn with probabilities `probs`."""
        sch, rng = self._schedule(), self._random()
        index = sampling.sample_categorical(sch, rng, candidates, probs, decision)
        self._last_decision = index
        return candidates[index]
