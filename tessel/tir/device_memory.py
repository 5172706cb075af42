"""Allocations in a device's own memory (issue 27): an `Allocate` annotated with a device type
(DLPack's code) and id is device memory, which the C backend takes from that device's allocator
(`tessel_dev_alloc` in the C prelude) instead of the host's workspace. The ahead-of-time main
allocates the arena of each device this way; an unannotated allocation is the host's."""

from __future__ import annotations

from tessel.tir.stmt import Allocate

DEVICE_TYPE = "tessel.device_type"
DEVICE_ID = "tessel.device_id"
CPU = 1  # DLPack's code of the CPU: host memory


def allocation_device(node: Allocate) -> tuple[int, int] | None:
    """The (device type, device id) whose memory `node` allocates, or None for the host's."""
    device_type = node.annotations.get(DEVICE_TYPE)
    if device_type is None or int(device_type) == CPU:
        return None
    return int(device_type), int(node.annotations.get(DEVICE_ID, 0))


__all__ = ["CPU", "DEVICE_ID", "DEVICE_TYPE", "allocation_device"]
