"""The trace: every primitive applied, printable as runnable Python and replayable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tessel.schedule.handles import BlockRV, BufferAxisRV, LoopRV

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


@dataclass(frozen=True)
class Instruction:
    """One primitive call: its name, arguments (handles included) and the handles it returned."""

    kind: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    outputs: tuple[Any, ...]


class Trace:
    """The instructions of a schedule, in order."""

    def __init__(self, instructions: Sequence[Instruction] = ()) -> None:
        self.instructions = list(instructions)

    def append(self, instruction: Instruction) -> None:
        """Record one more instruction."""
        self.instructions.append(instruction)

    def set_decision(self, decision: Any) -> None:
        """Record the decision of the last (sampling) instruction, so replay reuses it."""
        last = self.instructions[-1]
        kwargs = (*((k, v) for k, v in last.kwargs if k != "decision"), ("decision", decision))
        self.instructions[-1] = Instruction(last.kind, last.args, kwargs, last.outputs)

    def apply_to_schedule(self, sch: Schedule) -> None:
        """Replay every instruction on `sch` (a fresh schedule of the same function)."""
        mapping: dict[int, Any] = {}
        for inst in self.instructions:
            args = tuple(_translate(a, mapping) for a in inst.args)
            kwargs = {k: _translate(v, mapping) for k, v in inst.kwargs}
            result = getattr(sch, inst.kind)(*args, **kwargs)
            for old, new in zip(inst.outputs, _as_outputs(result), strict=True):
                mapping[id(old)] = new

    def __str__(self) -> str:
        names: dict[int, str] = {}
        lines = []
        for inst in self.instructions:
            call = ", ".join(
                [_show(a, names) for a in inst.args]
                + [f"{k}={_show(v, names)}" for k, v in inst.kwargs]
            )
            lines.append(f"{_assignment(inst, names)}sch.{inst.kind}({call})")
        return "\n".join(lines)

    def __len__(self) -> int:
        return len(self.instructions)


_LIST_RESULTS = frozenset(
    {"get_loops", "split", "get_child_blocks", "get_producers", "get_consumers"}
    | {"sample_perfect_tile", "get_buffer_axes", "buffer_split"}
)


def _assignment(inst: Instruction, names: dict[int, str]) -> str:
    """`b0 = `, `l1, l2 = `, or `l1, = ` for a one-element list result; empty without outputs."""
    if not inst.outputs:
        return ""
    targets = ", ".join(_name_of(o, names) for o in inst.outputs)
    one_of_a_list = len(inst.outputs) == 1 and inst.kind in _LIST_RESULTS
    return f"{targets}{',' if one_of_a_list else ''} = "


def _as_outputs(result: Any) -> tuple[Any, ...]:
    if result is None:
        return ()
    if isinstance(result, list | tuple):
        return tuple(result)
    return (result,)


def _translate(value: Any, mapping: dict[int, Any]) -> Any:
    if isinstance(value, BlockRV | LoopRV | BufferAxisRV):
        return mapping.get(id(value), value)
    if isinstance(value, list | tuple):
        return type(value)(_translate(v, mapping) for v in value)
    return value


def _name_of(handle: Any, names: dict[int, str]) -> str:
    if not isinstance(
        handle, BlockRV | LoopRV | BufferAxisRV
    ):  # a sampled value: printed as a literal where used
        names[-1 - len(names)] = name = f"v{len(names)}"  # a fresh key: equal ints share an id
        return name
    if id(handle) not in names:
        prefix = {BlockRV: "b", LoopRV: "l"}.get(type(handle), "a")
        names[id(handle)] = f"{prefix}{len(names)}"
    return names[id(handle)]


def _show(value: Any, names: dict[int, str]) -> str:
    if isinstance(value, BlockRV | LoopRV | BufferAxisRV):
        return _name_of(value, names)
    if isinstance(value, list | tuple):
        inner = ", ".join(_show(v, names) for v in value)
        return (
            f"[{inner}]"
            if isinstance(value, list)
            else f"({inner}{',' if len(value) == 1 else ''})"
        )
    return repr(value)
