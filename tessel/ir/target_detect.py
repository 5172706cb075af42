"""Find the host CPU's vector width, FMA, data caches and physical cores, for `Target.detect`.

It reads `proc/cpuinfo` and `sys/devices/system/cpu/cpuN/cache/index*/{level,type,size}` under a
root directory: `/` for this machine, a fake tree in tests. A field it cannot find is left out
of the result, so the `Target` default stands in for it; a missing or unreadable file (macOS,
a container without /sys) is never an error.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

# AArch64 always has NEON (Advanced SIMD: 32 registers of 16 bytes) and fused multiply-add.
_ARM64_MACHINES = ("aarch64", "arm64")
_SIZE = re.compile(r"(\d+)\s*([KMG]?)B?")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class CPUFields(TypedDict, total=False):
    """The `Target` fields detection found; an absent key was not found."""

    vector_bytes: int
    fma: bool
    vector_registers: int
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    cores: int


def detect_cpu(
    root: str | os.PathLike[str] = "/",
    *,
    affinity: Collection[int] | None = None,
    machine: str | None = None,
) -> CPUFields:
    """The CPU fields of the machine under `root`, for the logical CPUs in `affinity` (default:
    those this process may run on) and the architecture `machine` (default: this one's)."""
    base = Path(root)
    processors = _read_cpuinfo(base / "proc" / "cpuinfo")
    cpus = sorted(_own_affinity() if affinity is None else affinity)
    first = cpus[0] if cpus else 0  # caches are read from the first CPU this process may use
    fields = CPUFields()
    fields.update(_vector_fields(processors, machine or platform.machine()))
    fields.update(_cache_fields(base / "sys/devices/system/cpu" / f"cpu{first}" / "cache"))
    fields["cores"] = _physical_cores(processors, cpus)
    return fields


def _own_affinity() -> Collection[int]:
    if hasattr(os, "sched_getaffinity"):  # Linux; macOS and Windows have no affinity call
        return os.sched_getaffinity(0)
    return range(os.cpu_count() or 1)


def _read_cpuinfo(path: Path) -> list[dict[str, str]]:
    """One `key: value` dict per processor block of /proc/cpuinfo; none if it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    blocks = []
    for chunk in re.split(r"\n\s*\n", text):
        pairs = (line.split(":", 1) for line in chunk.splitlines() if ":" in line)
        block = {key.strip(): value.strip() for key, value in pairs}
        if block:
            blocks.append(block)
    return blocks


def _vector_fields(processors: Sequence[Mapping[str, str]], machine: str) -> CPUFields:
    """Width and count of the widest SIMD registers, and FMA: x86 `flags`, Arm `Features`."""
    first = processors[0] if processors else {}
    flags = set(first.get("flags", "").split()) | set(first.get("Features", "").split())
    fma = "fma" in flags
    if "avx512f" in flags:
        return CPUFields(vector_bytes=64, vector_registers=32, fma=fma)
    if "avx2" in flags:
        return CPUFields(vector_bytes=32, vector_registers=16, fma=fma)
    if "sse2" in flags:  # also AVX without AVX2: its integer operations are 16 bytes wide
        return CPUFields(vector_bytes=16, vector_registers=16, fma=fma)
    if "asimd" in flags or machine.lower() in _ARM64_MACHINES:
        return CPUFields(vector_bytes=16, vector_registers=32, fma=True)
    return CPUFields()


def _cache_fields(directory: Path) -> CPUFields:
    """L1 data, L2 and L3 sizes from sysfs; a level the tree lacks is 0 (the CPU has none)."""
    sizes: dict[int, int] = {}
    for index in sorted(directory.glob("index*")):
        entry = _read_cache_index(index)
        if entry is not None:
            sizes[entry[0]] = entry[1]
    if not sizes:  # no cache tree at all: unknown, so the defaults stand
        return CPUFields()
    return CPUFields(l1_bytes=sizes.get(1, 0), l2_bytes=sizes.get(2, 0), l3_bytes=sizes.get(3, 0))


def _read_cache_index(index: Path) -> tuple[int, int] | None:
    """(level, bytes) of one data or unified cache; None for an instruction cache or bad files."""
    try:
        level = int((index / "level").read_text())
        kind = (index / "type").read_text().strip()
        size = _parse_size((index / "size").read_text())
    except (OSError, ValueError):
        return None
    if kind == "Instruction" or size is None:
        return None
    return level, size


def _parse_size(text: str) -> int | None:
    """Bytes in a sysfs cache size such as "48K", "32768K" or "1M"."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    return int(match[1]) * _UNITS[match[2]]


def _physical_cores(processors: Sequence[Mapping[str, str]], cpus: Sequence[int]) -> int:
    """Distinct (package, core) pairs among the CPUs in `cpus`; without that topology (Arm, no
    /proc) each logical CPU counts as a core."""
    wanted = set(cpus)
    cores = {
        (block.get("physical id", "0"), block["core id"])
        for block in processors
        if "core id" in block and _processor_number(block) in wanted
    }
    return len(cores) or max(1, len(cpus))


def _processor_number(block: Mapping[str, str]) -> int | None:
    try:
        return int(block.get("processor", ""))
    except ValueError:
        return None
