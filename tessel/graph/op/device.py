"""Device operators, the vocabulary of device planning (TVM's PlanDevices): `on_device` and
`device_copy`, with Relay's names and attributes; their attribute values are VirtualDevices.

`on_device(data, virtual_device=D, constrain_body=True, constrain_result=False)` says that `data`
(`constrain_body`) and/or the value of the call (`constrain_result`) live on D; it computes
nothing. `device_copy(data, src_virtual_device=S, dst_virtual_device=D)` copies `data` from S to
D. Both have the type of their argument, whatever it is (a tensor, a tuple, a function), as
Relay's IdentityRel gives them, and evaluate to it: the reference evaluator runs on one device.

Lowering: a `device_copy` is no kernel. FuseOps leaves it a call of main, LowerTE keeps it
there, MemoryPlan makes it a copy step between two devices' memories, and the ahead-of-time main
performs it through the runtime, which checks both sides and counts it (issue 27). Its
lowering below (an identity copy) serves only the operator tests. An `on_device` refuses to
lower: it is an annotation that device planning consumes, so meeting one in LowerTE says so
plainly.
Both are OPAQUE: a copy across devices must never fuse into a kernel of either side, and an
annotation fused away would lose the device it names.
"""

from __future__ import annotations

from typing import Any

from tessel import topi
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.ir.virtual_device import VirtualDevice
from tessel.transform.errors import LoweringError

# The operators that name devices: annotations and copies, never parts of a kernel.
DEVICE_OPERATORS = frozenset({"on_device", "device_copy"})
_ANYWHERE = VirtualDevice.fully_unconstrained()  # Relay's default for these attributes


def _identity_rel(args: Args, attrs: Attrs) -> Type:
    return args.by_name["data"]


def _copy_kernel(data: Any, *, attrs: Attrs) -> Any:
    """An identity copy of a tensor, or of each tensor of a (nested) tuple."""
    if isinstance(data, list | tuple):
        return [_copy_kernel(field, attrs=attrs) for field in data]
    return topi.identity(data)


def _refuse_on_device(data: Any, *, attrs: Attrs) -> Any:
    raise LoweringError(
        f"on_device (to {attrs.virtual_device}) is a device annotation, not a computation, and "
        "cannot be lowered to a kernel",
        rule="lower_te.on-device",
        hint="device planning (PlanDevices) consumes on_device; until it runs in the pipeline, "
        "replace each on_device call by its argument before compiling",
    )


OPERATORS = (
    OpDef(
        "on_device",
        ("data",),
        (
            Attr("virtual_device", "virtual_device", _ANYWHERE),
            Attr("constrain_body", "bool", True),
            Attr("constrain_result", "bool", False),
        ),
        _identity_rel,
        _refuse_on_device,
        lambda x, *, attrs: x,
        OpPattern.OPAQUE,
        "Annotates `data` (constrain_body) and/or the call's value (constrain_result) as living "
        "on `virtual_device`; the value is `data`.",
    ),
    OpDef(
        "device_copy",
        ("data",),
        (
            Attr("src_virtual_device", "virtual_device", _ANYWHERE),
            Attr("dst_virtual_device", "virtual_device", _ANYWHERE),
        ),
        _identity_rel,
        _copy_kernel,
        lambda x, *, attrs: x,
        OpPattern.OPAQUE,
        "`data` copied from `src_virtual_device` to `dst_virtual_device`.",
    ),
)

__all__ = ["DEVICE_OPERATORS", "OPERATORS"]
