"""Pass infrastructure: passes are frozen dataclasses `IRModule -> IRModule` run in a
PassContext."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tessel.ir.module import IRModule


class PassInstrument:
    """Hooks around each pass: override `before_pass` / `after_pass`."""

    def before_pass(self, pass_: Pass, mod: IRModule) -> None:
        """Called before `pass_` runs on `mod`."""

    def after_pass(self, pass_: Pass, mod: IRModule) -> None:
        """Called after `pass_` produced `mod`."""


@dataclass
class PrintAfterAll(PassInstrument):
    """Print the module after every pass (to `write`, default print)."""

    write: Callable[[str], None] = print

    def after_pass(self, pass_: Pass, mod: IRModule) -> None:
        self.write(f"# after {pass_.name}\n{mod}")


@dataclass
class PassTimingInstrument(PassInstrument):
    """Record the wall time each pass took, in seconds, in `timings`."""

    timings: list[tuple[str, float]] = field(default_factory=list)
    _start: float = 0.0

    def before_pass(self, pass_: Pass, mod: IRModule) -> None:
        self._start = time.perf_counter()

    def after_pass(self, pass_: Pass, mod: IRModule) -> None:
        self.timings.append((pass_.name, time.perf_counter() - self._start))


@dataclass
class PassContext:
    """Configuration for a pipeline run: instruments, verification after each pass, options."""

    instruments: Sequence[PassInstrument] = ()
    verify: bool = False
    verifier: Callable[[IRModule, str], None] | None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pass:
    """An IRModule -> IRModule transformation; its options are its dataclass fields."""

    name: ClassVar[str] = "pass"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """The transformation itself; subclasses override this (or a per-function hook)."""
        raise NotImplementedError

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext()
        for instrument in ctx.instruments:
            instrument.before_pass(self, mod)
        result = self.transform_module(mod, ctx)
        for instrument in ctx.instruments:
            instrument.after_pass(self, result)
        if ctx.verify and ctx.verifier is not None:
            ctx.verifier(result, self.name)
        return result


@dataclass(frozen=True)
class Sequential(Pass):
    """Run passes in order."""

    passes: tuple[Pass, ...] = ()
    name: ClassVar[str] = "sequential"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for pass_ in self.passes:
            mod = pass_(mod, ctx)
        return mod
