"""`tessel compile --timings`: where a compile's wall time goes, per stage and per pass.

The compile already reports its stages to a `Progress` (importing, graph passes, scheduling
kernels, planning memory, lowering, generating C, compiling C) and runs its passes in a
`PassContext`; `StageTimer` listens to both, beside the progress display, and `table` prints
what it heard. A pass is counted in the stage it ran in, and only at the top level: a pass that
runs others (LowerTE's per-kernel passes) is one line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tessel.ir.module import IRModule
from tessel.ir.transform import Pass, PassInstrument
from tessel.support.progress import Progress


@dataclass
class StageTime:
    """One stage: its wall time, the items it counted, and its top-level passes' times."""

    name: str
    seconds: float = 0.0
    items: int = 0
    passes: list[tuple[str, float]] = field(default_factory=list)


class StageTimer(Progress, PassInstrument):
    """A Progress that forwards every report to `display` and times each stage, and a pass
    instrument that times the passes run inside each stage."""

    def __init__(self, display: Progress) -> None:
        self.display = display
        self.stages: list[StageTime] = []
        self._stage_start = 0.0
        self._pass_starts: list[float] = []

    def _end_stage(self) -> None:
        if self.stages:
            self.stages[-1].seconds += time.perf_counter() - self._stage_start

    def stage(self, name: str, total: int | None = None) -> None:
        """End the running stage and start timing `name`."""
        self._end_stage()
        self.stages.append(StageTime(name))
        self._stage_start = time.perf_counter()
        self.display.stage(name, total)

    def advance(self, count: int = 1) -> None:
        """Count `count` items of the running stage."""
        if self.stages:
            self.stages[-1].items += count
        self.display.advance(count)

    def end(self) -> None:
        """End the last stage's timing, leaving the display to its owner."""
        self._end_stage()
        self._stage_start = time.perf_counter()

    def finish(self) -> None:
        """End the last stage, and the display."""
        self.end()
        self.display.finish()

    def before_pass(self, pass_: Pass, mod: IRModule) -> None:
        self._pass_starts.append(time.perf_counter())

    def after_pass(self, pass_: Pass, mod: IRModule) -> None:
        seconds = time.perf_counter() - self._pass_starts.pop()
        if not self._pass_starts and self.stages:  # nested passes are inside this one's time
            self.stages[-1].passes.append((pass_.name, seconds))

    def table(self) -> str:
        """The timings as a plain-text table: stages, their passes indented, then the total."""
        width = max(
            [len(s.name) for s in self.stages]
            + [len(p) + 2 for s in self.stages for p, _ in s.passes]
            + [len("stage")]
        )
        lines = [f"{'stage':<{width}}  {'seconds':>8}  {'items':>5}"]
        for stage in self.stages:
            items = str(stage.items) if stage.items else ""
            lines.append(f"{stage.name:<{width}}  {stage.seconds:8.3f}  {items:>5}")
            for name, seconds in stage.passes:
                lines.append(f"{'  ' + name:<{width}}  {seconds:8.3f}")
        total = sum(stage.seconds for stage in self.stages)
        lines.append(f"{'total':<{width}}  {total:8.3f}")
        return "\n".join(lines)
