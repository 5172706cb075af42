"""The weights of a compiled model in memory: private aligned copies on the host, uploads to a
second device's memory (issue 27), and the table of their addresses the ahead-of-time main takes
(tessel.graph.aot)."""

from __future__ import annotations

import weakref

import numpy as np

from tessel.graph.aot import AotModule
from tessel.graph.memory_plan import MemoryPlan
from tessel.runtime import Module
from tessel.runtime.devices import DeviceMemory
from tessel.runtime.strings import is_string_array, to_records


def weight_table(
    owner: object, library: Module, aot: AotModule, plan: MemoryPlan
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The host weights of `aot`'s main (private, writeable, C-contiguous, aligned copies: main
    hands the kernels non-const pointers) and the table of every weight's address, in main's
    order. A weight read on another device is uploaded there once and given back when `owner`
    goes. Linked weights (link_params) live in the library: main takes none."""
    params = aot.of_kind("weight")
    host = [p for p in params if p.place.is_host]
    arrays = tuple(_host_weight(plan.constants[p.index], plan.alignment) for p in host)
    addresses = {p.slot: a.ctypes.data for p, a in zip(host, arrays, strict=True)}
    addresses.update(_upload_device_weights(owner, library, aot, plan))
    return arrays, np.array([addresses[p.slot] for p in params], np.uintp)


def _host_weight(array: np.ndarray, alignment: int) -> np.ndarray:
    """The weight as main reads it: an aligned copy, or for strings their records (whose base
    holds the bytes, tessel/runtime/strings.py)."""
    if is_string_array(array):
        return to_records(array, "a string constant")
    return aligned_copy(array, alignment)


def _upload_device_weights(
    owner: object, library: Module, aot: AotModule, plan: MemoryPlan
) -> dict[int, int]:
    """The weights read on a device other than the host, uploaded to its memory: their
    addresses by slot."""
    weights = [p for p in aot.of_kind("weight") if not p.place.is_host]
    if not weights:
        return {}
    memory = library.device_memory
    assert memory is not None, "a main that reads device weights uses the device runtime"
    addresses, uploaded = {}, []
    for param in weights:
        place = param.place
        address = memory.upload(plan.constants[param.index], place.device_type, place.device_id)
        addresses[param.slot] = address
        uploaded.append((address, place.device_type))
    weakref.finalize(owner, _release, memory, uploaded)
    return addresses


def _release(memory: DeviceMemory, uploaded: list[tuple[int, int]]) -> None:
    for address, device_type in uploaded:
        memory.release(address, device_type)


def aligned_bytes(nbytes: int, alignment: int) -> np.ndarray:
    """`nbytes` bytes whose first byte is `alignment`-aligned."""
    raw = np.zeros(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + nbytes]


def aligned_copy(array: np.ndarray, alignment: int) -> np.ndarray:
    """A writeable C-contiguous copy of `array` starting on an `alignment`-byte boundary, as
    the arena's tensors do: a packed weight row read by whole vectors that straddles cache
    lines cost MiniLM's Q/K/V product 8-10% against the same weights aligned."""
    copy = aligned_bytes(array.nbytes, alignment).view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


__all__ = ["aligned_bytes", "aligned_copy", "weight_table"]
