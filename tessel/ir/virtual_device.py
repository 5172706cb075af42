"""VirtualDevice: where a value lives and which code runs there (TVM's VirtualDevice, the
vocabulary of device planning).

A VirtualDevice constrains up to four things: the device type (DLPack's numbering: 1 = CPU,
2 = CUDA, 12 = ext_dev, ...), which device of that type (`virtual_device_id`), the `Target`
that compiles code for it, and the memory scope ("global", "texture", ...). Each may be left
unconstrained (-1, -1, None, ""); `VirtualDevice()` constrains nothing. Device planning
(PlanDevices) joins the constraints it meets, so `join` is the least upper bound and `default`
fills the gaps of one device from another, exactly as TVM's `VirtualDevice::Join` and
`VirtualDevice::Default`.

Unlike IR nodes (`Node`, compared by identity), a VirtualDevice compares by value, as a Target
does: TVM interns them (one object per distinct device), so equal devices are the same object
there, and value equality is what `structural_equal`, `structural_hash` and the text printer's
metadata table rely on.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from tessel.ir.target import Target
from tessel.support.errors import UserError

UNCONSTRAINED = -1  # TVM's kInvalidDeviceType and "any virtual device id"

# DLPack's DLDeviceType numbering with TVM's names (tvm.runtime.Device.DEVICE_TYPE_TO_NAME).
DEVICE_TYPE_NAMES: dict[int, str] = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 5: "aocl", 6: "sdaccel", 7: "vulkan",
    8: "metal", 9: "vpi", 10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed",
    14: "oneapi", 15: "webgpu", 16: "hexagon",
}  # fmt: skip
DEVICE_TYPE_CODES: dict[str, int] = {name: code for code, name in DEVICE_TYPE_NAMES.items()}
DEVICE_TYPE_CODES["llvm"] = DEVICE_TYPE_CODES["c"] = 1  # TVM accepts target kinds as CPU names

# The device type each Target kind generates code for (Target::GetTargetDeviceType).
_TARGET_DEVICE_TYPE = {"c": 1}


def device_type_code(device_type: int | str) -> int:
    """The DLPack code of a device type given by code or name ("cpu" -> 1, "cuda" -> 2)."""
    if isinstance(device_type, str):
        code = DEVICE_TYPE_CODES.get(device_type.lower())
        if code is None:
            raise UserError(
                f"unknown device type {device_type!r}",
                rule="virtual-device.type",
                hint=f"use one of {sorted(DEVICE_TYPE_NAMES.values())}",
            )
        return code
    if isinstance(device_type, bool) or not isinstance(device_type, int):
        raise UserError(
            f"a device type is an int or a name, not {device_type!r}", rule="virtual-device.type"
        )
    if device_type != UNCONSTRAINED and device_type < 1:
        raise UserError(
            f"device type {device_type} is not a DLPack device type (1, 2, ...)",
            rule="virtual-device.type",
            hint="-1 leaves it unconstrained",
        )
    return device_type


def device_type_name(code: int) -> str:
    """The name of DLPack device type `code` ("cpu" for 1); the number itself when unnamed."""
    return DEVICE_TYPE_NAMES.get(code, str(code))


@dataclass(frozen=True, slots=True)
class VirtualDevice:
    """Where a value lives: device type, device id, target and memory scope, each of which may be
    unconstrained. `device_type` may be given by name ("cuda"); it is stored as its code."""

    device_type: int = UNCONSTRAINED
    virtual_device_id: int = UNCONSTRAINED
    target: Target | None = None
    memory_scope: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "device_type", device_type_code(self.device_type))
        device_id = self.virtual_device_id
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < -1:
            raise UserError(
                f"virtual_device_id must be an int >= -1, got {device_id!r}",
                rule="virtual-device.id",
                hint="-1 leaves it unconstrained",
            )
        if self.target is not None and not isinstance(self.target, Target):
            raise UserError(
                f"target must be a Target or None, got {self.target!r}",
                rule="virtual-device.target",
            )
        if not isinstance(self.memory_scope, str):
            raise UserError(
                f"memory_scope must be a string, got {self.memory_scope!r}",
                rule="virtual-device.scope",
            )
        # As TVM checks: a target generates code for one device type, which must be this one.
        if self.target is not None:
            wanted = _TARGET_DEVICE_TYPE[self.target.kind]
            if self.device_type != wanted:
                given = self.device_name or "an unconstrained one"
                raise UserError(
                    f"a {self.target.kind!r} target runs on device type "
                    f"{device_type_name(wanted)}, not {given}",
                    rule="virtual-device.target",
                    hint="VirtualDevice.for_target(target) takes the device type from the target",
                )

    @staticmethod
    def fully_unconstrained() -> VirtualDevice:
        """The device that constrains nothing (TVM's VirtualDevice::FullyUnconstrained)."""
        return _FULLY_UNCONSTRAINED

    @staticmethod
    def for_target(target: Target, memory_scope: str = "") -> VirtualDevice:
        """The device `target` generates code for, any id (TVM's VirtualDevice::ForTarget)."""
        return VirtualDevice(_TARGET_DEVICE_TYPE[target.kind], UNCONSTRAINED, target, memory_scope)

    @property
    def device_name(self) -> str:
        """The device type's name ("cpu", "cuda"); "" when unconstrained."""
        return "" if self.device_type == UNCONSTRAINED else device_type_name(self.device_type)

    @property
    def is_fully_unconstrained(self) -> bool:
        """No field is constrained."""
        return self == _FULLY_UNCONSTRAINED

    @property
    def is_fully_constrained(self) -> bool:
        """Every field is constrained."""
        return (
            self.device_type != UNCONSTRAINED
            and self.virtual_device_id != UNCONSTRAINED
            and self.target is not None
            and self.memory_scope != ""
        )

    def join(self, other: VirtualDevice) -> VirtualDevice | None:
        """The least device meeting both, or None if a field is constrained two ways (Join)."""
        if self == other:
            return self
        merged = {}
        for name, unset in _FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != unset and theirs != unset and mine != theirs:
                return None
            merged[name] = theirs if mine == unset else mine
        return VirtualDevice(**merged)

    def default(self, other: VirtualDevice) -> VirtualDevice:
        """`self` with its unconstrained fields taken from `other` (TVM's Default)."""
        # `other`'s target is taken only where it fits this device type, so this never fails.
        merged = {
            name: getattr(other if getattr(self, name) == unset else self, name)
            for name, unset in _FIELDS
        }
        if (
            self.target is None
            and other.target is not None
            and self.device_type not in (UNCONSTRAINED, _TARGET_DEVICE_TYPE[other.target.kind])
        ):
            merged["target"] = None
        return VirtualDevice(**merged)

    def with_memory_scope(self, memory_scope: str) -> VirtualDevice:
        """This device with another memory scope."""
        return replace(self, memory_scope=memory_scope)

    def __repr__(self) -> str:
        # Only the constrained fields, the device type by name; exact (structural digests of
        # graphs holding devices are made from this text): a target shows every field that
        # differs from the default Target.
        parts = []
        if self.device_type != UNCONSTRAINED:
            parts.append(f"device_type={device_type_name(self.device_type)}")
        if self.virtual_device_id != UNCONSTRAINED:
            parts.append(f"virtual_device_id={self.virtual_device_id}")
        if self.target is not None:
            parts.append(f"target={_target_text(self.target)}")
        if self.memory_scope:
            parts.append(f"memory_scope={self.memory_scope!r}")
        return f"VirtualDevice({', '.join(parts)})"


def _target_text(target: Target) -> str:
    """`Target(kind='c', cores=4)`: the kind and the fields that differ from the default."""
    default = Target()
    changed = [
        f"{f.name}={getattr(target, f.name)!r}"
        for f in fields(Target)
        if f.name == "kind" or getattr(target, f.name) != getattr(default, f.name)
    ]
    return f"Target({', '.join(changed)})"


_FIELDS = (
    ("device_type", UNCONSTRAINED),
    ("virtual_device_id", UNCONSTRAINED),
    ("target", None),
    ("memory_scope", ""),
)
_FULLY_UNCONSTRAINED = VirtualDevice()

__all__ = [
    "DEVICE_TYPE_CODES", "DEVICE_TYPE_NAMES", "UNCONSTRAINED", "VirtualDevice", "device_type_code",
    "device_type_name",
]  # fmt: skip
