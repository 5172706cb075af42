"""The second device's memory, from Python (issue 27): every Tessel library carries the device
runtime of the C prelude (an "ext_dev" stand-in whose memory is blocks the library registers),
and the executor uses it to upload the weights a device reads, once, and to read how many
`device_copy` steps the library's calls have made."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from tessel.runtime.errors import RuntimeCallError


@dataclass(frozen=True)
class CopyCount:
    """The device copies a library has made since it was loaded, and their bytes."""

    copies: int
    nbytes: int


class DeviceMemory:
    """The device runtime of one loaded library (tessel_device_* in the C prelude)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._upload = library.tessel_device_upload
        self._upload.restype = ctypes.c_void_p
        self._upload.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t]
        self._release = library.tessel_device_release
        self._release.restype = None
        self._release.argtypes = [ctypes.c_int32, ctypes.c_void_p]
        self._copies = library.tessel_device_copies
        self._copied_bytes = library.tessel_device_copied_bytes
        for counter in (self._copies, self._copied_bytes):
            counter.restype = ctypes.c_uint64
            counter.argtypes = []

    def upload(self, array: np.ndarray, device_type: int, device_id: int) -> int:
        """The address of a copy of `array` in the memory of device (type, id); release it."""
        data = np.ascontiguousarray(array)
        address = self._upload(device_type, device_id, data.ctypes.data, data.nbytes)
        if not address:
            raise RuntimeCallError(
                f"cannot allocate {data.nbytes} bytes of device memory (device type "
                f"{device_type}, id {device_id})",
                rule="runtime.device-memory",
            )
        return int(address)

    def release(self, address: int, device_type: int) -> None:
        """Give back memory `upload` returned."""
        self._release(device_type, address)

    def copies(self) -> CopyCount:
        """The copies between devices made by this library's calls so far."""
        return CopyCount(int(self._copies()), int(self._copied_bytes()))


__all__ = ["CopyCount", "DeviceMemory"]
