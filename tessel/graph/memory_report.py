"""The memory report of a compiled model (`tessel show --memory`, issue 27): each arena (a device
and memory scope) with the bytes it allocates and the most that are live at once, the constants
per device, the copies between devices one run makes, and the largest tensors."""

from __future__ import annotations

from tessel.graph.memory_plan import KernelCall, MemoryPlan, Place, TensorSlot

LARGEST = 10  # tensors listed by default


def memory_report(plan: MemoryPlan, largest: int = LARGEST) -> str:
    """The plan's memory as a few plain-text tables (see the module docstring)."""
    lines = ["arenas (intermediates, reused by liveness):"]
    lines.append(_row("place", "allocated bytes", "peak live bytes", "tensors"))
    counts: dict[Place, int] = {}
    for slot in plan.tensors:
        if slot.kind == "intermediate" and slot.alias_of < 0:
            counts[slot.place] = counts.get(slot.place, 0) + 1
    for arena in plan.arenas:
        lines.append(_row(arena.place, arena.nbytes, arena.live_bytes, counts[arena.place]))
    if not plan.arenas:
        lines.append("  (none)")
    lines.append("constants (planned apart, each once per device that reads it):")
    lines.append(_row("device", "bytes", "tensors", ""))
    devices = sorted({t.place.device for t in plan.tensors if t.kind == "constant"})
    for device in devices:
        slots = [t for t in plan.tensors if t.kind == "constant" and t.place.device == device]
        lines.append(_row(device, plan.constant_bytes_on(device), len(slots), ""))
    if not devices:
        lines.append("  (none)")
    copies = plan.copies
    moved = sum(plan.tensors[c.source].nbytes for c in copies)
    lines.append(f"device copies per run: {len(copies)} ({moved} bytes)")
    for copy in copies:
        slot = plan.tensors[copy.source]
        lines.append(f"  {copy.src} -> {copy.dst}: {slot.type_text}")
    lines.append(f"largest tensors (of {len(plan.tensors)}):")
    producers = _producers(plan)
    ranked = sorted(plan.tensors, key=lambda t: (-t.nbytes, t.id))
    for slot in ranked[:largest]:
        made_by = producers.get(slot.id)
        where = f", from {made_by}" if made_by else ""
        lines.append(f"  {slot.nbytes:>12}  {slot.kind:<12} {_describe(slot)}{where}")
    return "\n".join(lines)


def _producers(plan: MemoryPlan) -> dict[int, str]:
    made: dict[int, str] = {}
    for step in plan.calls:
        name = step.kernel if isinstance(step, KernelCall) else "device_copy"
        for slot in step.outputs:
            made[slot] = name
    return made


def _describe(slot: TensorSlot) -> str:
    return f"{slot.type_text} on {slot.place}"


def _row(*cells: object) -> str:
    first, *rest = (str(c) for c in cells)
    return "  " + first.ljust(28) + "".join(c.rjust(18) for c in rest if c != "")


__all__ = ["LARGEST", "memory_report"]
