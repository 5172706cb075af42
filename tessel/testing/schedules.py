"""check_schedule: a schedule's result checked three ways (expected IR, execution, trace replay)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.support.frozen_map import FrozenMap
from tessel.testing.differential import BACKENDS, check_same_results
from tessel.tir.function import PrimFunc


def check_schedule(
    before: PrimFunc,
    steps: Callable[[Schedule], Any],
    expected: PrimFunc | None = None,
    *,
    shape_vars: Mapping[str, int] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    backends: Sequence[str] = BACKENDS,
) -> Schedule:
    """Apply `steps` to a schedule of `before`; the result equals `expected` (when given), runs
    like `before` (in the interpreter) in each of `backends` (the interpreter and C; C alone
    for a kernel of millions of multiply-adds, which the interpreter takes minutes over), and
    its trace replays to the same function."""
    sch = Schedule(before)
    steps(sch)
    if expected is not None:
        assert_structural_equal(sch.func, named_like(expected, sch.func))
    check_same_results(
        before, sch.func, shape_vars=shape_vars, rtol=rtol, atol=atol, backends=backends
    )
    replayed = Schedule(before)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)
    return sch


def named_like(expected: PrimFunc, actual: PrimFunc) -> PrimFunc:
    """`expected` under the actual function's name: an Expected script's own name is not the
    point."""
    attrs = dict(expected.attrs)
    if "global_symbol" in actual.attrs:
        attrs["global_symbol"] = actual.attrs["global_symbol"]
    return with_changes(expected, attrs=FrozenMap(attrs))
