"""Helpers of the schedule-rule tests: a model from Relay text, compiled and checked against the
evaluator, the plans the rules chose for its kernels, a kernel's default schedule checked
(results and trace), a function's blocks by name, and seeded random inputs."""

from __future__ import annotations

import numpy as np

import tessel.graph as graph
from tessel.graph import InferType, evaluate, parse
from tessel.graph.schedule_report import kernel_plans
from tessel.ir.functor import post_order
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.schedule.rules import Applied, ScheduleReport, default_schedule
from tessel.schedule.rules.default import accumulator_rows, gemm_columns, host_target
from tessel.schedule.rules.loops import LoopsPlan
from tessel.schedule.rules.plan import vector_lanes
from tessel.testing import check_same_results
from tessel.tir.block import Block

# The GEMM rule's register tile on this machine: at most ROWS rows of COLUMNS float32
# accumulators, in vectors of LANES.
ROWS, COLUMNS = accumulator_rows(host_target()), gemm_columns(host_target())
LANES = vector_lanes(host_target(), 32)


def model(body: str, params: str) -> object:
    """A typed module whose main has `params` and `body` (Relay text)."""
    return InferType()(parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n'))


def compile_and_check(mod, inputs: dict, weights: dict, passes=None) -> str:
    """Compile `mod` (with the graph `passes`, the default ones when None), compare with the
    evaluator; the kernels' printed TIR."""
    compiled = graph.compile(mod, params=weights, passes=passes)
    expected = evaluate(mod, *inputs.values(), params=weights)
    np.testing.assert_allclose(compiled(*inputs.values()), expected, rtol=1e-4, atol=1e-4)
    return "\n".join(f.script() for gv, f in compiled.lowered.items() if gv.name_hint != "main")


def rule_plans(mod, weights: dict, passes=None) -> list:
    """The plans the default schedule's rules (the default loops aside) chose for the kernels
    `graph.compile` makes of `mod` (with the graph `passes`, the default ones when None), in
    order."""
    kernels = kernel_plans(mod, weights, passes=passes)
    return [applied.plan for _, report in kernels for applied in rule_records(report)]


def rule_records(report: ScheduleReport) -> list[Applied]:
    """The rules' records of a schedule report, without the default loops (LoopsPlan) that the
    blocks no rule claims get: the zero padding, a copy, an elementwise epilogue."""
    return [applied for applied in report.applied if not isinstance(applied.plan, LoopsPlan)]


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    """Standard-normal float32 values of `shape`."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def check_default_schedule(
    func, target, rtol: float = 1e-4, atol: float = 1e-4, backends=("interpreter", "c")
) -> Schedule:
    """The default schedule of `func` on `target`: it runs like `func` (in the interpreter) in
    each of `backends`, and its trace replays to the same function."""
    sch = default_schedule(func, target)
    check_same_results(func, sch.func, rtol=rtol, atol=atol, backends=backends)
    replayed = Schedule(func)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)
    return sch


def block_named(func, name: str) -> Block:
    """The block of `func` called `name`."""
    return next(n for n in post_order(func.body) if isinstance(n, Block) and n.name_hint == name)
