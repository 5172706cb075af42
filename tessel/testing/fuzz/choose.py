"""The next random schedule step for a function: a primitive by weight, then its arguments."""

from __future__ import annotations

import random
from collections.abc import Callable

from tessel.testing.fuzz import choose_blocks as cb
from tessel.testing.fuzz import choose_layout as cl
from tessel.testing.fuzz import choose_loops as cp
from tessel.testing.fuzz.steps import Step
from tessel.testing.fuzz.view import BlockView, blocks
from tessel.tir.function import PrimFunc

Chooser = Callable[[random.Random, BlockView, list[BlockView]], "Step | None"]


def _loops_only(choose: Callable[[random.Random, BlockView], Step | None]) -> Chooser:
    return lambda rng, b, _blocks: choose(rng, b)


# Weights: loop transformations are the bread and butter of schedules, so they come most often.
CHOOSERS: tuple[tuple[Chooser, int], ...] = (
    (_loops_only(cp.split), 8),
    (_loops_only(cp.fuse), 4),
    (_loops_only(cp.reorder), 4),
    (_loops_only(cp.loop_kind), 6),
    (_loops_only(cp.annotate), 2),
    (_loops_only(cp.add_unit_loop), 1),
    (_loops_only(cp.blockize), 2),
    (cb.compute_at, 6),
    (cb.inline, 4),
    (cb.cache, 4),
    (cb.reindex, 1),
    (cb.storage, 2),
    (cb.reduction, 4),
    (cb.pad_einsum, 1),
    (cb.query, 1),
    (cl.transform_layout, 4),
    (cl.buffer_steps, 2),
    (cl.axis_separator, 1),
    (cl.block_layout, 1),
)


def _prefer_reductions(rng: random.Random, choose: Chooser, views: list[BlockView]) -> BlockView:
    reductions = [v for v in views if v.is_reduction]
    if choose is cb.reduction and reductions and rng.random() < 0.9:
        return rng.choice(reductions)
    return rng.choice(views)


def random_step(rng: random.Random, func: PrimFunc) -> Step | None:
    """A random step on one of `func`'s blocks (None when a few tries find nothing to do)."""
    views = blocks(func)
    if not views:
        return None
    choosers, weights = zip(*CHOOSERS, strict=True)
    for _ in range(5):
        choose = rng.choices(choosers, weights=weights)[0]
        step = choose(rng, _prefer_reductions(rng, choose, views), views)
        if step is not None:
            return step
    return None
