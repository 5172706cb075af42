"""Device domains, the unknowns of device planning: where a value lives, solved by unification.

A first-order domain holds one VirtualDevice (a tensor, or a tuple, lives on one device); its
fields may still be unconstrained. A higher-order domain is a function value's: one domain per
parameter and one for the result, so a constraint on a closure's parameter flows back to the
argument its caller passes. Unifying a first-order domain with a higher-order one collapses the
function: its parameters and result all land on that one device (a function stored in a tuple).

Every operation is a worklist or a loop, never recursion, so deep graphs plan without hitting
Python's recursion limit. `attempt` undoes a failed unification (a trail of changes), which is
how a place that allows a copy first tries to avoid one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tessel.graph.ty import FuncType, Type
from tessel.ir.virtual_device import VirtualDevice

_ANYWHERE = VirtualDevice.fully_unconstrained()


class DeviceDomain:
    """One node of the union-find: first-order (`device`) or higher-order (`params`, `result`).
    `reason` says which constraint fixed the device, for error messages."""

    __slots__ = ("defaulted_with", "device", "params", "parent", "reason", "result")

    def __init__(
        self,
        device: VirtualDevice = _ANYWHERE,
        params: tuple[DeviceDomain, ...] | None = None,
        result: DeviceDomain | None = None,
        reason: str = "",
    ) -> None:
        self.parent: DeviceDomain | None = None
        # the last device `default` filled this one from: defaulting again from it is a no-op
        self.defaulted_with: VirtualDevice | None = None
        self.device, self.params, self.result, self.reason = device, params, result, reason

    @property
    def is_higher_order(self) -> bool:
        """Whether this is a function value's domain."""
        return self.params is not None


class DeviceConflict(Exception):  # noqa: N818 - an internal signal, turned into a UserError
    """Two constraints put one value on incompatible devices."""

    def __init__(self, lhs: DeviceDomain, rhs: DeviceDomain) -> None:
        super().__init__("device conflict")
        self.lhs = (lhs.device, lhs.reason)
        self.rhs = (rhs.device, rhs.reason)


class DeviceDomains:
    """The union-find of device domains, with a trail so that a unification can be undone."""

    def __init__(self) -> None:
        self._trail: list[tuple[DeviceDomain, str, Any]] | None = None

    # --- building -----------------------------------------------------------------------------

    def free(self) -> DeviceDomain:
        """A first-order domain constraining nothing yet."""
        return DeviceDomain()

    def function(self, params: tuple[DeviceDomain, ...], result: DeviceDomain) -> DeviceDomain:
        """The higher-order domain of a function value."""
        return DeviceDomain(params=tuple(params), result=result)

    def for_type(self, ty: Type | None) -> DeviceDomain:
        """A free domain shaped by `ty`: higher-order for function types, else first-order."""
        if not isinstance(ty, FuncType):
            return self.free()
        return self.function(
            tuple(self.for_type(a) for a in ty.arg_types), self.for_type(ty.ret_type)
        )

    def like(self, domain: DeviceDomain) -> DeviceDomain:
        """A free domain with the shape `domain` has now (a copy's result, before planning)."""
        domain = self.find(domain)
        if not domain.is_higher_order:
            return self.free()
        return self.function(tuple(self.like(p) for p in domain.params), self.like(domain.result))

    # --- reading ------------------------------------------------------------------------------

    def find(self, domain: DeviceDomain) -> DeviceDomain:
        """The representative of `domain`'s class."""
        root = domain
        while root.parent is not None:
            root = root.parent
        if self._trail is None:  # path compression only outside an attempt: it is not undone
            while domain.parent is not None and domain.parent is not root:
                domain.parent, domain = root, domain.parent
        return root

    def result_leaf(self, domain: DeviceDomain) -> DeviceDomain:
        """The first-order domain a value's device is read from: a function's result's."""
        domain = self.find(domain)
        while domain.is_higher_order:
            domain = self.find(domain.result)
        return domain

    def device_of(self, domain: DeviceDomain) -> VirtualDevice:
        """The device of a value of this domain (a function's: its result's)."""
        return self.result_leaf(domain).device

    # --- constraining -------------------------------------------------------------------------

    def constrain(self, domain: DeviceDomain, device: VirtualDevice, reason: str) -> None:
        """Put `domain`'s value (a function's result) on `device`; DeviceConflict if it cannot."""
        if device.is_fully_unconstrained:
            return
        self.unify(self.result_leaf(domain), DeviceDomain(device, reason=reason))

    def unify(self, lhs: DeviceDomain, rhs: DeviceDomain) -> None:
        """Make both domains one; DeviceConflict (partly applied) when devices disagree."""
        pending = [(lhs, rhs)]
        while pending:
            a, b = pending.pop()
            a, b = self.find(a), self.find(b)
            if a is b:
                continue
            if not a.is_higher_order and not b.is_higher_order:
                joined = a.device.join(b.device)
                if joined is None:
                    raise DeviceConflict(a, b)
                reason = a.reason if a.device != _ANYWHERE else b.reason
                self._set(b, "parent", a)
                self._set(a, "device", joined)
                self._set(a, "reason", reason)
            elif a.is_higher_order and b.is_higher_order:
                if len(a.params) != len(b.params):
                    raise DeviceConflict(a, b)
                self._set(b, "parent", a)
                pending.extend(zip(a.params, b.params, strict=True))
                pending.append((a.result, b.result))
            else:  # collapse the function onto the first-order device
                first, higher = (b, a) if a.is_higher_order else (a, b)
                self._set(higher, "parent", first)
                pending.extend((first, p) for p in higher.params)
                pending.append((first, higher.result))

    def attempt(self, lhs: DeviceDomain, rhs: DeviceDomain) -> bool:
        """Unify if the devices allow it, else change nothing; whether it unified."""
        with self._recording() as trail:
            try:
                self.unify(lhs, rhs)
            except DeviceConflict:
                for node, name, old in reversed(trail):
                    setattr(node, name, old)
                return False
        return True

    def default(self, domain: DeviceDomain, device: VirtualDevice) -> None:
        """Fill the unconstrained fields of `domain` from `device`: a function's result first,
        then its parameters from the result's device (they live where the function runs)."""
        pending = [(domain, device)]
        while pending:
            node, fallback = pending.pop()
            node = self.find(node)
            if node.is_higher_order:
                leaf = self.result_leaf(node.result)
                result_device = leaf.device.default(fallback)
                pending.extend((p, result_device) for p in node.params)
                pending.append((node.result, fallback))
            elif node.defaulted_with is not fallback:
                filled = node.device.default(fallback)
                if filled != node.device:
                    self._set(node, "device", filled)
                self._set(node, "defaulted_with", fallback)

    # --- the trail ----------------------------------------------------------------------------

    def _set(self, node: DeviceDomain, name: str, value: Any) -> None:
        if self._trail is not None:
            self._trail.append((node, name, getattr(node, name)))
        setattr(node, name, value)

    @contextmanager
    def _recording(self) -> Iterator[list[tuple[DeviceDomain, str, Any]]]:
        outer, self._trail = self._trail, []
        try:
            yield self._trail
        finally:
            if outer is not None:
                outer.extend(self._trail)
            self._trail = outer


__all__ = ["DeviceConflict", "DeviceDomain", "DeviceDomains"]
