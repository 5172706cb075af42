"""Target's CPU description: detection from /proc and /sys (real and fake trees), overrides,
validation, the one-line summary, and the unchanged defaults."""

import os
import sys
from pathlib import Path

import pytest

from tessel.ir.target import Target
from tessel.ir.target_detect import detect_cpu
from tessel.support.errors import UserError

KIB, MIB = 1 << 10, 1 << 20


def _fake_machine(root: Path, cpuinfo: str | None, caches: tuple[tuple[int, str, str], ...] = ()):
    """Write proc/cpuinfo (unless None) and cpu0's sysfs cache entries (level, type, size)."""
    if cpuinfo is not None:
        (root / "proc").mkdir(parents=True)
        (root / "proc" / "cpuinfo").write_text(cpuinfo)
    for number, (level, kind, size) in enumerate(caches):
        index = root / "sys/devices/system/cpu/cpu0/cache" / f"index{number}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
    return root


def _x86_cpuinfo(flags: str, topology: list[tuple[int, int]]) -> str:
    """One block per logical CPU; `topology` holds its (physical id, core id)."""
    blocks = [
        f"processor\t: {n}\nvendor_id\t: GenuineIntel\nphysical id\t: {package}\n"
        f"core id\t\t: {core}\nflags\t\t: {flags}\n"
        for n, (package, core) in enumerate(topology)
    ]
    return "\n".join(blocks)


X86_CACHES = ((1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"),
              (3, "Unified", "16384K"))  # fmt: skip


def test_an_avx2_machine_with_two_hyperthreaded_cores(tmp_path):
    cpuinfo = _x86_cpuinfo("fpu sse sse2 avx avx2 fma", [(0, 0), (0, 1), (0, 0), (0, 1)])
    root = _fake_machine(tmp_path, cpuinfo, X86_CACHES)
    found = detect_cpu(root, affinity=range(4), machine="x86_64")
    assert found == {
        "vector_bytes": 32,
        "vector_registers": 16,
        "fma": True,
        "l1_bytes": 32 * KIB,
        "l2_bytes": 512 * KIB,
        "l3_bytes": 16 * MIB,
        "cores": 2,
    }
    assert detect_cpu(root, affinity={0, 2}, machine="x86_64")["cores"] == 1  # siblings


def test_an_avx512_machine_with_two_packages(tmp_path):
    flags = "fpu sse2 avx avx2 fma avx512f avx512bw"
    cpuinfo = _x86_cpuinfo(flags, [(0, 0), (0, 1), (1, 0), (1, 1)])
    caches = ((1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
              (3, "Unified", "32M"))  # fmt: skip
    found = detect_cpu(_fake_machine(tmp_path, cpuinfo, caches), affinity=range(4), machine="x86")
    assert Target(**found) == Target(
        vector_bytes=64,
        vector_registers=32,
        fma=True,
        l1_bytes=48 * KIB,
        l2_bytes=2 * MIB,
        l3_bytes=32 * MIB,
        cores=4,  # core id 0 of package 0 and of package 1 are different cores
    )


def test_an_sse2_machine_without_fma(tmp_path):
    root = _fake_machine(tmp_path, _x86_cpuinfo("fpu sse sse2 avx", [(0, 0)]), X86_CACHES)
    found = detect_cpu(root, affinity={0}, machine="x86_64")
    assert (found["vector_bytes"], found["vector_registers"], found["fma"]) == (16, 16, False)


def test_an_arm64_machine_without_l3_or_core_ids(tmp_path):
    cpuinfo = "\n".join(f"processor\t: {n}\nFeatures\t: fp asimd evtstrm aes\n" for n in range(8))
    caches = ((1, "Data", "64K"), (1, "Instruction", "64K"), (2, "Unified", "1024K"))
    found = detect_cpu(
        _fake_machine(tmp_path, cpuinfo, caches), affinity=range(6), machine="aarch64"
    )
    assert found == {
        "vector_bytes": 16,
        "vector_registers": 32,
        "fma": True,
        "l1_bytes": 64 * KIB,
        "l2_bytes": 1 * MIB,
        "l3_bytes": 0,  # the tree lists no level 3: the CPU has none
        "cores": 6,  # no topology: each logical CPU this process may use counts
    }
    assert "L3 none" in Target(**found).describe()


def test_no_proc_and_no_sys_falls_back_to_the_defaults(tmp_path):
    found = detect_cpu(tmp_path, affinity={0, 1, 2}, machine="x86_64")
    assert found == {"cores": 3}  # the only thing known: the CPUs this process may use
    assert Target(**found) == Target(cores=3)


def test_no_proc_on_arm64_still_knows_neon(tmp_path):
    found = detect_cpu(tmp_path, affinity={0}, machine="arm64")  # macOS on Apple silicon
    assert found == {"vector_bytes": 16, "vector_registers": 32, "fma": True, "cores": 1}


def test_unreadable_or_garbled_files_are_skipped(tmp_path):
    (tmp_path / "proc" / "cpuinfo").mkdir(parents=True)  # reading it fails with an OSError
    caches = ((1, "Data", "lots"), (2, "Unified", "1M"))
    found = detect_cpu(_fake_machine(tmp_path, None, caches), affinity=(), machine="x86_64")
    assert found == {"l1_bytes": 0, "l2_bytes": 1 * MIB, "l3_bytes": 0, "cores": 1}


def test_detection_on_this_machine_is_consistent():
    found = detect_cpu()
    target = Target.detect()
    assert target == Target(**found)
    assert target.vector_bytes in {16, 32, 64}
    assert target.vector_registers in {16, 32}
    assert 1 <= target.cores <= (os.cpu_count() or 1)
    assert target.describe().startswith(f"c: {target.vector_bytes}-byte vectors")
    if sys.platform == "linux" and Path("/sys/devices/system/cpu/cpu0/cache").is_dir():
        assert target.l1_bytes > 0
        assert target.l2_bytes > 0


def test_overrides_win_over_detection():
    target = Target.detect(vector_bytes=16, cores=1, fma=False, sanitize="address")
    assert (target.vector_bytes, target.cores, target.fma, target.sanitize) == (
        16,
        1,
        False,
        "address",
    )
    assert target.l1_bytes == Target.detect().l1_bytes  # what was not overridden is detected


@pytest.mark.parametrize(
    ("field", "value", "rule", "message"),
    [
        ("vector_bytes", 1, "target.vector-bytes", "at least 2"),
        ("vector_bytes", 24, "target.vector-bytes", "power of two, got 24"),
        ("vector_registers", 0, "target.vector-registers", "at least 1"),
        ("l1_bytes", -1, "target.cache-size", "l1_bytes must be >= 0"),
        ("l3_bytes", -4096, "target.cache-size", "l3_bytes must be >= 0"),
        ("cores", 0, "target.cores", "at least 1"),
    ],
)
def test_invalid_cpu_fields_name_the_rule(field, value, rule, message):
    with pytest.raises(UserError, match=message) as err:
        Target(**{field: value})
    assert err.value.rule == rule
    with pytest.raises(UserError, match=message):
        Target.detect(**{field: value})  # an override is checked like any field


def test_describe_is_one_line():
    target = Target(
        vector_bytes=64,
        vector_registers=32,
        l1_bytes=48 * KIB,
        l2_bytes=MIB,
        l3_bytes=32 * MIB,
        cores=2,
    )
    assert (
        target.describe() == "c: 64-byte vectors, 32 registers, fma, L1 48K L2 1M L3 32M, 2 cores"
    )
    assert Target(
        fma=False, link_params=True, sanitize="address", l2_bytes=1280 * KIB
    ).describe() == (
        "c: 32-byte vectors, 16 registers, no fma, L1 32K L2 1280K L3 8M, 1 core, link_params, "
        "sanitize=address"
    )


def test_the_default_target_is_unchanged_and_does_not_look_at_the_machine():
    old_fields = Target(
        kind="c", max_stack_alloca_size=1024, link_params=False, vector_bytes=32, sanitize=None
    )
    assert Target() == old_fields == Target.of("c")
    assert (Target().vector_bytes, Target().vector_registers, Target().cores) == (32, 16, 1)
    assert (Target().l1_bytes, Target().l2_bytes, Target().l3_bytes) == (
        32 * KIB,
        256 * KIB,
        8 * MIB,
    )
    with pytest.raises(UserError) as err:
        Target(kind="llvm")
    assert err.value.rule == "target.kind"
    with pytest.raises(UserError) as err:
        Target(sanitize="thread")
    assert err.value.rule == "target.sanitize"
