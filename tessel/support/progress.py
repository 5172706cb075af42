"""Progress of long work (importing, compiling a model): stages, and items done within a stage.

The work calls a `Progress` at stage boundaries and once per item (a kernel scheduled, a lowering
pass run); the caller decides how to show it (the `tessel` command: a rich display on a
terminal, plain lines otherwise). The base class does nothing, so `NO_PROGRESS` is the default.
"""

from __future__ import annotations


class Progress:
    """Receives progress reports; every method is a no-op here, so a subclass overrides only
    what it shows."""

    def stage(self, name: str, total: int | None = None) -> None:
        """A stage begins (and the previous one ends); `total` counts its items, if it has any."""

    def advance(self, count: int = 1) -> None:
        """`count` more items of the current stage are done."""

    def finish(self) -> None:
        """The work is done: the last stage ends."""


NO_PROGRESS = Progress()
