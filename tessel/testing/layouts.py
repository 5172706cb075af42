"""Checking a schedule that changes parameter layouts: the caller's side of the contract.

The transformed function takes its parameters in new layouts, so it cannot run on the original
arguments. It is run the way a graph-level caller would (TY-NNP thread): each changed
argument goes through its record's forward steps (padding filled with the pad value, which the
interpreter checks against the function's buffer constraints), and each result comes back
through the reverse steps; that must equal the original function on the original arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.testing.differential import BACKENDS, run_with
from tessel.testing.random_inputs import random_arguments
from tessel.testing.schedules import named_like
from tessel.tir.function import PrimFunc


def check_layout_schedule(
    before: PrimFunc,
    steps: Callable[[Schedule], Any],
    expected: PrimFunc | None = None,
    *,
    backends: Sequence[str] = BACKENDS,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> Schedule:
    """Apply `steps`; the result equals `expected` (when given), its trace replays, and it computes
    what `before` does on forward-transformed arguments, reverse-transformed after the call."""
    sch = Schedule(before)
    steps(sch)
    if expected is not None:
        assert_structural_equal(sch.func, named_like(expected, sch.func))
    replayed = Schedule(before)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)
    check_transformed_results(before, sch, backends=backends, seed=seed, rtol=rtol, atol=atol)
    return sch


def check_transformed_results(
    before: PrimFunc,
    sch: Schedule,
    *,
    backends: Sequence[str] = BACKENDS,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    target: Target | str = "c",
) -> None:
    """`sch.func` on forward-transformed arguments, reverse-transformed, equals `before`
    (C built for `target`)."""
    args = random_arguments(before, np.random.default_rng(seed))
    reference = run_with("interpreter", before, args)
    records = sch.layout_records()
    names = [before.buffer_map[p].name if p in before.buffer_map else None for p in before.params]
    transformed = [
        records[n].forward(a) if n in records else a for n, a in zip(names, args, strict=True)
    ]
    for backend in backends:
        results = run_with(backend, sch.func, transformed, target=target)
        for name, want, got in zip(names, reference, results, strict=True):
            if not isinstance(want, np.ndarray):
                continue
            back = records[name].reverse(got) if name in records else got
            np.testing.assert_allclose(
                back, want, rtol=rtol, atol=atol, err_msg=f"{backend}: parameter `{name}` differs"
            )
