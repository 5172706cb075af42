"""PlaceForExecution: PlanDevices for a model the executor runs, whose caller hands it host arrays
and takes host arrays back (issue 27, execution across devices).

PlanDevices may put a parameter or the result of `main` on another device: a parameter read only
by kernels of the second device lives there, as TVM plans it. The executor's caller holds NumPy
arrays in host memory, so this pass plans, then moves `main`'s interface to the host explicitly:
each parameter planned elsewhere becomes a host parameter copied to its device on entry, and a
result planned elsewhere is copied back on exit. The copies are ordinary `device_copy` calls of
the planned graph, so the executor performs and counts them like every other; planning again
fills in what the new copies imply (PlanDevices is idempotent on the result).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from tessel.graph.expr import Call, Expr, Function, Let, Var, with_type
from tessel.graph.memory_plan import Place
from tessel.graph.op.device import DEVICE_OPERATORS
from tessel.graph.passes.plan_devices import PlanDevices, device_copy, plan_of
from tessel.graph.traversal import post_order_exprs
from tessel.ir.expr import Op
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.ir.virtual_device import VirtualDevice


def host_device(target: Target | None = None) -> VirtualDevice:
    """The host: where the executor's caller keeps inputs and outputs, and the default device."""
    return VirtualDevice("cpu", 0, target or Target())


def uses_devices(mod: IRModule) -> bool:
    """Whether any graph function of `mod` names a device: an `on_device` or `device_copy`
    call, or a `virtual_device` on a function or parameter. Only such a module needs planning:
    everything else runs on the host."""
    for _, func in mod.items():
        if not isinstance(func, Function):
            continue
        for node in post_order_exprs(func):
            if isinstance(node, Call) and isinstance(node.op, Op):
                if node.op.name in DEVICE_OPERATORS:
                    return True
            elif isinstance(node, Function | Var) and node.virtual_device is not None:
                return True
    return False


@dataclass(frozen=True)
class PlaceForExecution(Pass):
    """PlanDevices with `host` as the default device, then `main`'s parameters and result moved
    to the host with explicit copies (see the module docstring)."""

    host: VirtualDevice = field(default_factory=host_device)
    name: ClassVar[str] = "place_for_execution"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        planned = PlanDevices(default_device=self.host)(mod, ctx)
        main = planned["main"]
        devices = plan_of(planned, self.host)
        host = Place.of(self.host)
        moved = [p for p in main.params if Place.of(devices.device_of(p)) != host]
        result = devices.device_of(main.body)
        if not moved and Place.of(result) == host:
            return planned
        body: Expr = main.body
        if Place.of(result) != host:
            body = device_copy(body, result, self.host)
        params = []
        for param in main.params:
            if param not in moved:
                params.append(param)
                continue
            host_param = Var(param.name_hint, param.type_annotation, virtual_device=self.host)
            if param.checked_type is not None:
                host_param = with_type(host_param, param.checked_type)
            params.append(host_param)
            # The old parameter, bound to the copy: the body is unchanged (ToGraphNormalForm
            # later turns the binding into dataflow).
            body = Let(param, device_copy(host_param, self.host, devices.device_of(param)), body)
        func = with_changes(main, params=tuple(params), body=body, virtual_device=self.host)
        return PlanDevices(default_device=self.host)(planned.with_function("main", func), ctx)


__all__ = ["PlaceForExecution", "host_device", "uses_devices"]
