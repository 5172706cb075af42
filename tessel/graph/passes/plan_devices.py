"""PlanDevices: decide where every value of a module's graph functions lives, and write the plan
into the program (TVM's PlanDevices, redesigned here; device_analysis.py says how the devices are
found).

The plan is written so that each expression's device follows from the program alone:
- every function (module functions, closures, fused kernels) gets its `virtual_device` (where its
  result lives) and each parameter its own;
- a value that moves between devices goes through a `device_copy` naming both;
- an `on_device(e, D, constrain_result=True)` wraps a let-bound value whose device is not the one
  of its scope (the only place nothing else implies it); every other on_device is consumed.
Planning a planned module changes nothing, and `plan_of(mod)` (or `device_of(mod, expr)`) reads
the device of any sub-expression back, which is how later passes use the plan.

It is not part of the default pipeline: the executors run everything on one device today.
(TVM also puts shape computations on the host; Tessel's shapes are static, so there are none.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tessel.graph.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    with_type,
)
from tessel.graph.op.device import DEVICE_OPERATORS
from tessel.graph.passes.device_analysis import DeviceAnalysis, DevicePlanningError, NeedsTypes
from tessel.graph.passes.infer_type import InferType
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.frozen_map import FrozenMap

# Where values nothing constrains live: device 0 of the CPU, with the C target (Tessel's one).
DEFAULT_DEVICE = VirtualDevice("cpu", 0, Target())


def on_device(expr: Expr, device: VirtualDevice) -> Call:
    """`expr` fixed on `device` (the value and its computation both there)."""
    call = Call(Op("on_device"), (expr,), {"virtual_device": device, "constrain_result": True})
    return _typed_like(call, expr)


def device_copy(expr: Expr, src: VirtualDevice, dst: VirtualDevice) -> Call:
    """A copy of `expr` from `src` to `dst`."""
    call = Call(Op("device_copy"), (expr,), {"src_virtual_device": src, "dst_virtual_device": dst})
    return _typed_like(call, expr)


def _typed_like(call: Call, expr: Expr) -> Call:
    return with_type(call, expr.checked_type) if expr.checked_type is not None else call


def _analyse(mod: IRModule, default_device: VirtualDevice) -> DeviceAnalysis:
    """The analysis of `mod`, typed first when it handles function values without types (types
    shape their domains); a first-order program plans without inferring them."""
    try:
        return DeviceAnalysis(mod, default_device)
    except NeedsTypes:
        return DeviceAnalysis(InferType()(mod), default_device)


def plan_of(mod: IRModule, default_device: VirtualDevice = DEFAULT_DEVICE) -> DeviceAnalysis:
    """The devices of `mod`'s expressions; on a planned module, the plan PlanDevices wrote."""
    return _analyse(mod, default_device)


def device_of(
    mod: IRModule, expr: Any, default_device: VirtualDevice = DEFAULT_DEVICE
) -> VirtualDevice:
    """Where `expr`, a sub-expression of planned `mod`, lives (one question; reuse `plan_of`'s
    answer for many, and pass a module that already carries types so the nodes are the same)."""
    return plan_of(mod, default_device).device_of(expr)


class _Capture:
    """Rebuilds one function with the solved devices written into it."""

    def __init__(self, analysis: DeviceAnalysis) -> None:
        self.analysis = analysis
        self.rebuilt: dict[int, Any] = {}

    def function(self, func: Function) -> Function:
        nodes = self.analysis.nodes[id(func)]
        self.params = {id(p) for n in nodes if isinstance(n, Function) for p in n.params}
        for node in nodes:
            self.rebuilt[id(node)] = self._rebuild(node)
        return self.rebuilt[id(func)]

    def _new(self, expr: Any) -> Any:
        return self.rebuilt.get(id(expr), expr)

    def _news(self, exprs: tuple[Any, ...]) -> tuple[Any, ...]:
        new = tuple(self._new(e) for e in exprs)
        return exprs if all(a is b for a, b in zip(new, exprs, strict=True)) else new

    def _device(self, expr: Any) -> VirtualDevice:
        return self.analysis.device_of(expr)

    def _rebuild(self, node: Any) -> Any:
        if isinstance(node, Var):
            device = self._device(node)
            if id(node) in self.params and (node.virtual_device or VirtualDevice()) != device:
                return with_changes(node, virtual_device=device)
            return node
        if isinstance(node, Constant | GlobalVar):
            return node
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, Function):
            return self._function(node)
        if isinstance(node, Let):
            return with_changes(
                node,
                var=self._new(node.var),
                value=self._let_value(node),
                body=self._new(node.body),
            )
        if isinstance(node, If):
            return with_changes(
                node,
                cond=self._new(node.cond),
                true_branch=self._new(node.true_branch),
                false_branch=self._new(node.false_branch),
            )
        if isinstance(node, Tuple):
            return with_changes(node, fields=self._news(node.fields))
        if isinstance(node, TupleGetItem):
            return with_changes(node, tuple_value=self._new(node.tuple_value))
        raise DevicePlanningError(
            f"PlanDevices cannot rewrite a {type(node).__name__}", rule="plan_devices.node"
        )

    def _function(self, func: Function) -> Function:
        device = self._device(func)
        changes: dict[str, Any] = {"params": self._news(func.params), "body": self._new(func.body)}
        if (func.virtual_device or VirtualDevice()) != device:
            changes["virtual_device"] = device
        return with_changes(func, **changes)

    def _call(self, call: Call) -> Expr:
        name = call.op.name if isinstance(call.op, Op) else None
        if name == "on_device":  # consumed: a copy if the value moves, else nothing
            (arg,) = call.args
            source, target = self._device(arg), self._device(call)
            new = self._new(arg)
            return new if source == target else device_copy(new, source, target)
        if name == "device_copy":
            (arg,) = call.args
            attrs = dict(call.attrs)
            attrs.update(
                src_virtual_device=self._device(arg), dst_virtual_device=self._device(call)
            )
            changes: dict[str, Any] = {"args": self._news(call.args)}
            if attrs != dict(call.attrs):
                changes["attrs"] = attrs
            return with_changes(call, **changes)
        return with_changes(call, op=self._new(call.op), args=self._news(call.args))

    def _let_value(self, let: Let) -> Expr:
        """The value, fixed on its device when that is not its scope's (nothing else says it)."""
        value = self._new(let.value)
        if isinstance(value, Var | GlobalVar | Function) or _is_device_call(value):
            return value  # its binding, its attribute or the call names the device
        device = self._device(let.value)
        return value if device == self._device(let) else on_device(value, device)


def _is_device_call(expr: Any) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name in DEVICE_OPERATORS


@dataclass(frozen=True)
class PlanDevices(Pass):
    """Place every value of the module's graph functions on a device (see the module docstring);
    `default_device` is where values that nothing constrains live. A DevicePlanningError names a
    value the program puts on two devices with no copy allowed between them."""

    default_device: VirtualDevice = DEFAULT_DEVICE
    name: ClassVar[str] = "plan_devices"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        analysis = _analyse(mod, self.default_device)
        typed = analysis.mod
        functions = {
            gv: _Capture(analysis).function(func) if isinstance(func, Function) else func
            for gv, func in typed.items()
        }
        if all(functions[gv] is func for gv, func in typed.items()):
            return typed
        return with_changes(typed, functions=FrozenMap(functions))


__all__ = [
    "DEFAULT_DEVICE",
    "DevicePlanningError",
    "PlanDevices",
    "device_copy",
    "device_of",
    "on_device",
    "plan_of",
]
