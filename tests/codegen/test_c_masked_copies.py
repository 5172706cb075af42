"""The prelude's masked loads and stores of 4-byte lanes: the same lanes move with the AVX-512,
AVX2 and portable versions (the portable one compiled here with the vector extensions off), and
disabled lanes neither load (they read 0) nor store."""

from __future__ import annotations

import platform
import subprocess

import pytest

from tessel.codegen.c_prelude import MASKED_LANES, PRELUDE
from tessel.runtime.compiler import find_compiler

_PROGRAM = r"""
#include <stdio.h>
int main(void) {
  int32_t src[16], dst[16], out[16];
  char mask16[16], mask8[8];
  for (int i = 0; i < 16; ++i) {
    src[i] = 100 + i; dst[i] = -1; out[i] = -7; mask16[i] = (i % 3) != 0;
  }
  for (int i = 0; i < 8; ++i) mask8[i] = (i % 2) == 0;
  tessel_masked_load4x16(dst, src, mask16);
  tessel_masked_store4x16(out, src, mask16);
  for (int i = 0; i < 16; ++i) printf("%d %d ", dst[i], out[i]);
  for (int i = 0; i < 16; ++i) { dst[i] = -1; out[i] = -7; }
  tessel_masked_load4x8(dst, src, mask8);
  tessel_masked_store4x8(out, src, mask8);
  for (int i = 0; i < 8; ++i) printf("%d %d ", dst[i], out[i]);
  printf("\n");
  return 0;
}
"""

_X86_FLAGS = {
    "portable": ["-mno-avx2", "-mno-avx512f"],
    "avx2": ["-mavx2", "-mno-avx512f"],
    "native": ["-march=native"],
}


def _expected() -> list[int]:
    values = []
    for i in range(16):
        on = i % 3 != 0
        values += [100 + i if on else 0, 100 + i if on else -7]
    for i in range(8):
        on = i % 2 == 0
        values += [100 + i if on else 0, 100 + i if on else -7]
    return values


def _cpu_flags() -> set[str]:
    try:
        text = open("/proc/cpuinfo").read()  # noqa: SIM115, PTH123  (read once, closed by GC)
    except OSError:
        return set()
    line = next((row for row in text.splitlines() if row.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 flags")
@pytest.mark.parametrize("variant", sorted(_X86_FLAGS))
def test_masked_copies_move_only_the_enabled_lanes(variant, tmp_path):
    if variant == "avx2" and "avx2" not in _cpu_flags():
        pytest.skip("this CPU has no AVX2")
    source = tmp_path / "masked.c"
    source.write_text(PRELUDE + MASKED_LANES + _PROGRAM)
    binary = tmp_path / "masked"
    compiler = find_compiler()
    build = subprocess.run(
        [*compiler, "-O2", *_X86_FLAGS[variant], str(source), "-o", str(binary)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert [int(v) for v in run.stdout.split()] == _expected()
