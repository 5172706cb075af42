"""The decorator that makes a Schedule method a recorded primitive."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tessel.schedule.errors import ScheduleError
from tessel.schedule.trace import Instruction

F = TypeVar("F", bound=Callable[..., Any])


def recorded(method: F) -> F:
    """Run a primitive; on success record it in the trace, on ScheduleError keep the function."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = self._func
        try:
            result = method(self, *args, **kwargs)
        except ScheduleError:
            self._func = before
            raise
        if isinstance(result, list | tuple):
            outputs = tuple(result)
        else:
            outputs = () if result is None else (result,)
        self.trace.append(Instruction(method.__name__, args, tuple(kwargs.items()), outputs))
        return result

    return run  # type: ignore[return-value]  (same signature as `method`)
