"""How the graph IR calls a lowered kernel (a PrimFunc of the same module): TVM's
`call_lowered(@fused_add, (%x, %y))`.

Tessel spells it `Call(GlobalVar, args, attrs={"call_lowered": 1})`, printed
`@fused_add(%x, %y, call_lowered=1)`. It is not an operator of the registry because an OpDef's
type relation sees argument types only, and the type of a call_lowered is the kernel's, which
is a PrimFunc's (destination-passing, no graph type). LowerTE keeps the types it had (every
rebuilt expression carries its `checked_type` from before lowering), and InferType reads a
call's type from the kernel's buffers: its arguments have the types of the first ones, the
call the type of the rest (a tuple when there are several).

After device planning (`LowerTE(devices=True)`), a call carries the device it runs on
(`virtual_device=`), and a `device_copy` between two devices stays a call of main: a step of
the executor, not a kernel.

The arguments are tensors only: tuple arguments are spread into their fields, and the kernel
takes its outputs after its inputs (`fused_split(%x, out0, out1)`), which the caller allocates.
A kernel that only reshapes (`reshape_only=1`) or only concatenates (`concat_axis=k`) is marked
so: MemoryPlan may give its output its input's bytes, or have its inputs written into their
slices of its output, and not call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.graph.expr import Call, Expr, with_type
from tessel.graph.ty import Type
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.virtual_device import VirtualDevice

CALL_LOWERED = "call_lowered"
# Marks a kernel that only reshapes its one input (the bytes in the same order, as TVM's
# `relay.reshape_only`): MemoryPlan lets its output share the input's storage and drops the copy.
RESHAPE_ONLY = "reshape_only"
# Marks a kernel that only concatenates its inputs along the axis it holds (an int): MemoryPlan
# may have each input written in place into its slice of the output and drop the call.
CONCAT_AXIS = "concat_axis"
# The device of a kernel call after device planning (a VirtualDevice): LowerTE writes it,
# MemoryPlan places the call's results in that device's memory.
VIRTUAL_DEVICE = "virtual_device"


def call_lowered(
    kernel: GlobalVar,
    args: Sequence[Expr],
    result_type: Type | None,
    reshape_only: bool = False,
    device: VirtualDevice | None = None,
    concat_axis: int | None = None,
) -> Call:
    """A call of the lowered kernel `kernel` on tensor `args`, typed `result_type`; `device`
    is where it runs (its arguments and results live there too), None for the host."""
    attrs: dict[str, object] = {CALL_LOWERED: 1, **({RESHAPE_ONLY: 1} if reshape_only else {})}
    if device is not None:
        attrs[VIRTUAL_DEVICE] = device
    if concat_axis is not None:
        attrs[CONCAT_AXIS] = concat_axis
    call = Call(kernel, tuple(args), attrs)
    # with_type keeps the node class: a Call
    return with_type(call, result_type) if result_type is not None else call  # type: ignore[return-value]


def is_call_lowered(expr: Any) -> bool:
    """True for a call of a lowered kernel (see the module docstring)."""
    return (
        isinstance(expr, Call)
        and isinstance(expr.op, GlobalVar)
        and bool(expr.attrs.get(CALL_LOWERED, 0))
    )


def concat_axis(expr: Call) -> int | None:
    """The axis a concatenate-only kernel joins its inputs along (CONCAT_AXIS), else None."""
    axis = expr.attrs.get(CONCAT_AXIS)
    return None if axis is None else int(axis)


def kernel_device(expr: Call) -> VirtualDevice | None:
    """The device a call_lowered runs on (None: the host, as without device planning)."""
    return expr.attrs.get(VIRTUAL_DEVICE)


def is_device_copy(expr: Any) -> bool:
    """True for a `device_copy` call, which LowerTE keeps in main as a step of the executor."""
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "device_copy"


def is_reshape_only(expr: Any) -> bool:
    """True for a call_lowered of a kernel that only reshapes its input (RESHAPE_ONLY)."""
    return is_call_lowered(expr) and bool(expr.attrs.get(RESHAPE_ONLY, 0))


__all__ = [
    "CALL_LOWERED",
    "CONCAT_AXIS",
    "RESHAPE_ONLY",
    "VIRTUAL_DEVICE",
    "call_lowered",
    "concat_axis",
    "is_call_lowered",
    "is_device_copy",
    "is_reshape_only",
    "kernel_device",
]
