"""The schedule report of a model (`tessel show --schedules`, issue 32): each kernel `graph.compile`
makes of it, with the plan each default-schedule rule chose for its blocks (tiles, packing,
padding, lanes, prefetch, parallel loops: tessel.schedule.rules.plan), the steps the schedule
refused (a block no other rule claims gets the default loops' plan, LoopsPlan)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tessel.graph.executor import bind_params, default_passes
from tessel.graph.passes.inline_functions import InlineFunctions, needs_inlining
from tessel.graph.passes.lower_te import LowerTE
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Pass
from tessel.schedule.rules.default import ScheduleReport, schedule_with_plans
from tessel.schedule.rules.plan import rule_target
from tessel.schedule.state import block_names
from tessel.tir.function import PrimFunc


def kernel_plans(
    mod: IRModule,
    params: Mapping[str, Any] | None = None,
    target: Target | None = None,
    jobs: int | None = None,
    passes: Sequence[Pass] | None = None,
) -> list[tuple[str, ScheduleReport]]:
    """The kernels `graph.compile` makes of `mod` with `params` bound, for `target` (None: this
    machine): the same graph passes (or `passes`, as `compile` takes them), then each kernel as
    LowerTE builds it, scheduled by the default rules with their plans recorded."""
    cpu = rule_target(target)
    mod = bind_params(mod, params or {})
    passes = default_passes(cpu, jobs) if passes is None else tuple(passes)
    if needs_inlining(mod):
        passes = (InlineFunctions(), *passes)
    for pass_ in passes:
        mod = pass_(mod)
    lowered = LowerTE(schedule=False, target=cpu, jobs=jobs)(mod)
    return [
        (gv.name_hint, schedule_with_plans(func, cpu))
        for gv, func in lowered.items()
        if isinstance(func, PrimFunc)
    ]


def schedule_report(kernels: list[tuple[str, ScheduleReport]]) -> str:
    """The kernels' plans as plain text: a kernel a paragraph, a plan a line, each refused step
    indented under its plan, then any block no plan claimed ("unscheduled")."""
    paragraphs = []
    for name, report in kernels:
        lines = [f"kernel {name}"]
        claimed: set[str] = {"root"}
        for applied in report.applied:
            lines.append(f"  {applied.plan!r}")
            lines.extend(
                f"    refused {r.primitive} [{r.rule}]: {r.message}" for r in applied.refused
            )
            claimed |= applied.blocks
        rest = [b for b in block_names(report.schedule.func) if b not in claimed]
        if rest:
            lines.append(f"  unscheduled: {', '.join(rest)}")
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)
