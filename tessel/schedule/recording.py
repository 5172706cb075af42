"""The decorator that makes a Schedule method a recorded primitive."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tessel.schedule.errors import ScheduleError
from tessel.schedule.trace import Instruction
from tessel.support.errors import InternalError
from tessel.tir.verify import VerifyError, verify_well_formed

F = TypeVar("F", bound=Callable[..., Any])


def recorded(method: F) -> F:
    """Run a primitive; on success record it in the trace, on ScheduleError keep the function."""
    return recorded_as(method.__name__)(method)


def recorded_as(name: str) -> Callable[[F], F]:
    """`recorded`, with the trace naming the primitive `name` (for a method behind a wrapper
    that normalises its arguments, so the trace shows what replay needs)."""
    return lambda method: _recording(method, name)  # type: ignore[return-value]


def _recording(method: F, name: str) -> F:

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = self._func
        try:
            result = method(self, *args, **kwargs)
        except ScheduleError:
            self._func = before
            raise
        if self.verify and self._func is not before:
            _check_still_well_formed(name, self._func)
        if isinstance(result, list | tuple):
            outputs = tuple(result)
        else:
            outputs = () if result is None else (result,)
        self.trace.append(Instruction(name, args, tuple(kwargs.items()), outputs))
        return result

    return run  # type: ignore[return-value]  (same signature as `method`)


def _check_still_well_formed(primitive: str, func: Any) -> None:
    """A primitive that produces ill-formed IR is our bug, not the user's (TVM's debug_mask)."""
    try:
        verify_well_formed(func)
    except VerifyError as err:
        raise InternalError(f"schedule primitive `{primitive}` produced ill-formed IR: {err}") from err
