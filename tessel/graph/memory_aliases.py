"""Tensors that share storage instead of being copied (MemoryPlan, issue 32's concat blocks).

- The output of a reshape-only kernel is its input's bytes (same order, same size).
- The inputs of a concatenate-only kernel are written in place: each producer writes straight
  into its slice of the output, and the concatenation copies nothing and is not called. That
  needs each slice to be contiguous: every dimension before the axis is 1 (a batch-1 model
  joining channels, also in NCHW[x]c: Inception's and GoogLeNet's blocks).

A tensor lives inside another (`parent`: the tensor holding it and its byte offset there), and
the outermost one (its top) is the one the arena places, live from the first of them to be
written to the last to be read. A reshape or a concatenation whose tensors cannot share (an
input, a constant or main's result; another place; a tensor already inside another, or joined
twice) stays a kernel: separate memory, copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Slot = dict[str, Any]  # MemoryPlan's slot under construction (memory_plan._SlotBuilder)


def shared_storage(
    slots: list[Slot],
    reshapes: Sequence[tuple[int, int, int]],
    concats: Sequence[tuple[int, tuple[int, ...], int]],
    nbytes: Any,
) -> tuple[dict[int, tuple[int, int]], set[int]]:
    """(slot -> (its top, byte offset in the top), the calls dropped) for `reshapes` ((output,
    input, call), in call order) and `concats` ((output, inputs, call)); the tops' live ranges
    are widened to cover what they hold. `nbytes(slot)` is a slot's size."""
    parent: dict[int, tuple[int, int]] = {}
    dropped: set[int] = set()
    for reshaped, source, call in reshapes:
        root, _ = _top(parent, source)
        if not _shareable(slots, root, reshaped) or slots[reshaped]["kind"] != "intermediate":
            continue
        parent[reshaped] = (source, 0)
        dropped.add(call)
    for output, inputs, call in concats:
        if not _gatherable(slots, parent, output, inputs):
            continue
        offset = 0
        for member in inputs:
            parent[member] = (output, offset)
            offset += nbytes(slots[member])
        dropped.add(call)
    tops = {slot: _top(parent, slot) for slot in parent}
    for slot, (top, _) in tops.items():
        slots[top]["start"] = min(slots[top]["start"], slots[slot]["start"])
        slots[top]["end"] = max(slots[top]["end"], slots[slot]["end"])
    return tops, dropped


def _top(parent: dict[int, tuple[int, int]], slot: int) -> tuple[int, int]:
    offset = 0
    while slot in parent:
        slot, inner = parent[slot]
        offset += inner
    return slot, offset


def _shareable(slots: list[Slot], holder: int, held: int) -> bool:
    """Whether `held` may live in the bytes of `holder`: both arena tensors of one place."""
    if slots[holder]["kind"] != "intermediate":
        return False
    return slots[holder]["place"] == slots[held]["place"]  # else a copy is missing: the
    # executor says so at run time


def _gatherable(
    slots: list[Slot], parent: dict[int, tuple[int, int]], output: int, inputs: tuple[int, ...]
) -> bool:
    """Whether every input of a concatenation may be written into its slice of `output`."""
    if output in parent or len(set(inputs)) != len(inputs) or output in inputs:
        return False
    for member in inputs:
        if member in parent or slots[member]["kind"] != "intermediate":
            return False
        if not _shareable(slots, output, member):
            return False
    return True


__all__ = ["shared_storage"]
