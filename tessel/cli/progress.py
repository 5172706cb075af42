"""How the `tessel` command shows progress (tessel.support.progress) on stderr: a rich display on
a terminal, plain lines in a log (a line per stage, and a periodic items-done line), nothing
with --quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tessel.support.progress import NO_PROGRESS, Progress


@contextmanager
def command_progress(quiet: bool, stream: TextIO | None = None) -> Iterator[Progress]:
    """The progress display for one command, ended when the block ends; an error ends it
    without the final "done", and the error is then the last thing on stderr."""
    stream = stream if stream is not None else sys.stderr
    if quiet:
        progress: Progress = NO_PROGRESS
    elif stream.isatty():
        progress = RichProgress(stream)
    else:
        progress = PlainProgress(stream.write)
    try:
        yield progress
    except BaseException:
        if isinstance(progress, PlainProgress | RichProgress):
            progress.stop()
        raise
    progress.finish()


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 60 else f"{int(value) // 60} min {int(value) % 60} s"


class PlainProgress(Progress):
    """Plain lines for logs: one when a stage begins, one at most every `interval` seconds while
    its items get done (with an estimate of the time left), and one when a counted stage ends."""

    def __init__(self, write: Callable[[str], Any], interval: float = 5.0) -> None:
        self.write, self.interval = write, interval
        self.start = time.perf_counter()
        self.name: str | None = None
        self.total: int | None = None
        self.done = 0
        self.stage_start = self.last_line = self.start

    def _line(self, text: str) -> None:
        now = time.perf_counter()
        self.last_line = now
        self.write(f"[{now - self.start:6.1f} s] {text}\n")

    def stage(self, name: str, total: int | None = None) -> None:
        self._end_stage()
        self.name, self.total, self.done = name, total, 0
        self.stage_start = time.perf_counter()
        self._line(name if total is None else f"{name}: 0/{total}")

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.perf_counter()
        if self.total is None or self.done >= self.total or now - self.last_line < self.interval:
            return
        left = (now - self.stage_start) / self.done * (self.total - self.done)
        self._line(f"{self.name}: {self.done}/{self.total}, about {_seconds(left)} left")

    def _end_stage(self) -> None:
        if self.name is not None and self.total is not None:
            took = _seconds(time.perf_counter() - self.stage_start)
            self._line(f"{self.name}: {self.done}/{self.total} done in {took}")
        self.name = None

    def finish(self) -> None:
        if self.name is None and self.last_line == self.start:
            return  # nothing was shown
        self._end_stage()
        self._line("done")

    def stop(self) -> None:
        """End without the "done" line (the work failed)."""
        self.name = None


class RichProgress(Progress):
    """A live display on a terminal: every stage so far with a spinner or a bar, items done out
    of the total, elapsed time and the time left."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichDisplay

        self.display = RichDisplay(
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=Console(file=stream),
        )
        self.task: Any = None
        self.started = False

    def stage(self, name: str, total: int | None = None) -> None:
        if not self.started:
            self.display.start()
            self.started = True
        self._end_stage()
        count = f"0/{total}" if total is not None else ""
        self.task = self.display.add_task(name, total=total, count=count, eta="")

    def advance(self, count: int = 1) -> None:
        if self.task is None:
            return
        task = self.display.tasks[-1]
        done = task.completed + count
        if task.total is None:
            self.display.update(self.task, completed=done)
            return
        left = (task.elapsed or 0.0) / done * (task.total - done)
        self.display.update(
            self.task,
            completed=done,
            count=f"{int(done)}/{int(task.total)}",
            eta=f"ETA {_seconds(left)}" if done < task.total else "",
        )

    def _end_stage(self) -> None:
        if self.task is None:
            return
        task = self.display.tasks[-1]
        total = task.total if task.total else 1  # a stage without items, or with none to do
        self.display.update(self.task, total=total, completed=total, eta="")
        self.task = None

    def finish(self) -> None:
        if self.started:
            self._end_stage()
            self.stop()

    def stop(self) -> None:
        """End the live display, leaving the stage that failed as it was."""
        if self.started:
            self.display.stop()
            self.started = False
