"""The decorator that makes a Schedule method a recorded primitive."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
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
    return lambda method: _recording(method, name)


def _recording(method: F, name: str) -> F:
    signature = inspect.signature(method)
    block_params = {
        p for p, param in signature.parameters.items() if "BlockRV" in str(param.annotation)
    }

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if block_params and _names_a_block(args, kwargs):
            args, kwargs = _blocks_by_name(self, signature, block_params, args, kwargs)
        before = self._func
        try:
            result = method(self, *args, **kwargs)
        except ScheduleError:
            self._func = before
            raise
        if self.verify and self._func is not before:
            check_still_well_formed(f"schedule primitive `{name}`", self._func)
        if isinstance(result, list | tuple):
            outputs = tuple(result)
        else:
            outputs = () if result is None else (result,)
        self.trace.append(Instruction(name, args, tuple(kwargs.items()), outputs))
        return result

    return run  # type: ignore[return-value]  # same signature as `method`


def _names_a_block(args: tuple, kwargs: dict) -> bool:
    return any(isinstance(a, str | list) for a in (*args, *kwargs.values()))


def _blocks_by_name(
    sch: Any, signature: inspect.Signature, block_params: set[str], args: tuple, kwargs: dict
) -> tuple[tuple, dict]:
    """The arguments with each block given by name (as TVM accepts: `transform_layout("B", ...)`)
    turned into its BlockRV by a recorded get_block, so the printed trace runs."""
    bound = signature.bind(sch, *args, **kwargs)
    for param in block_params & bound.arguments.keys():
        value = bound.arguments[param]
        if isinstance(value, str):
            bound.arguments[param] = _block_named(sch, value)
        elif isinstance(value, list) and any(isinstance(v, str) for v in value):
            bound.arguments[param] = [
                _block_named(sch, v) if isinstance(v, str) else v for v in value
            ]
    return bound.args[1:], bound.kwargs


def _block_named(sch: Any, name: str) -> BlockRV:
    return sch.get_block(name)  # recorded, as TVM records it, so a printed trace defines it


def check_still_well_formed(what: str, func: Any) -> None:
    """A primitive (or the default schedule's steps, `what`) that produces ill-formed IR is our
    bug, not the user's (TVM's debug_mask)."""
    try:
        verify_well_formed(func)
    except VerifyError as err:
        raise InternalError(f"{what} produced ill-formed IR: {err}") from err
