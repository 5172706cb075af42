"""Shrinking a failing case: fewer steps, fewer tensors, smaller extents, same failure.

Greedy and deterministic: each pass tries one simplification at a time and keeps it when the
case still fails with the same signature (kind, stage, exception type), until nothing helps or
the trial budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tessel.testing.fuzz.case import Failure
from tessel.testing.fuzz.programs import Program
from tessel.testing.fuzz.steps import Step

Reproduce = Callable[[Program, list[Step]], "tuple[Failure | None, list[str]]"]


@dataclass
class Shrunk:
    """The smallest failing case found, its failure, and how many trials it took."""

    program: Program
    steps: list[Step]
    failure: Failure
    trials: int


def _smaller_steps(steps: list[Step]) -> Iterator[list[Step]]:
    for k in reversed(range(len(steps))):
        yield steps[:k] + steps[k + 1 :]


def _smaller_programs(program: Program) -> Iterator[Program]:
    computed = [t.name for t in program.tensors if t.kind != "input"]
    for name in computed:
        if (name,) != program.outputs:
            yield program.restricted_to((name,))
    for name, value in program.sizes:
        for smaller in sorted({1, 2, 3, value // 2, value - 1}):
            if 1 <= smaller < value:
                candidate = program.with_size(name, smaller)
                if candidate.is_valid():
                    yield candidate


def shrink(
    program: Program,
    steps: list[Step],
    failure: Failure,
    reproduce: Reproduce,
    max_trials: int = 150,
) -> Shrunk:
    """The case made as small as `reproduce` allows while it fails the same way."""
    best = Shrunk(program, list(steps), failure, 0)

    def attempt(candidate: Program, candidate_steps: list[Step]) -> bool:
        if best.trials >= max_trials:
            return False
        best.trials += 1
        found, outcomes = reproduce(candidate, candidate_steps)
        if found is None or found.signature() != failure.signature():
            return False
        kept = [s for s, o in zip(candidate_steps, outcomes, strict=False) if o != "skipped"]
        if len(outcomes) < len(candidate_steps):  # the step that failed has no outcome: keep it
            kept.append(candidate_steps[len(outcomes)])
        best.program, best.steps, best.failure = candidate, kept, found
        return True

    progress = True
    while progress and best.trials < max_trials:
        progress = any(attempt(best.program, s) for s in _smaller_steps(best.steps))
        progress = any(attempt(p, best.steps) for p in _smaller_programs(best.program)) or progress
    return best
