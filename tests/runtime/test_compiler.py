"""The C compiler driver: content-addressed cache, atomic writes, compiler errors."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from tessel.runtime import BuildError, compile_source, compile_units
from tessel.runtime import compiler as compiler_module
from tessel.testing.compiler_runs import record_compiler_runs

SOURCE = "int tessel_test_answer(void) { return 42; }\n"


@pytest.fixture
def counted_compiles(monkeypatch):
    """Count compiler runs that build a shared object (not probes of flags)."""
    compiler_module.compiler_flags(compiler_module.find_compiler())  # probes happen once, first
    return record_compiler_runs(monkeypatch)


def test_same_source_is_compiled_once_and_loads(tmp_path, counted_compiles):
    first = compile_source(SOURCE, cache_dir=tmp_path)
    second = compile_source(SOURCE, cache_dir=tmp_path)
    assert first == second
    assert len(counted_compiles) == 1
    assert ctypes.CDLL(str(first)).tessel_test_answer() == 42
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([first.name, first.with_suffix(".c").name])  # no temporary left over


def test_different_sources_get_different_objects(tmp_path, counted_compiles):
    one = compile_source(SOURCE, cache_dir=tmp_path)
    other = compile_source(SOURCE.replace("42", "43"), cache_dir=tmp_path)
    assert one != other
    assert len(counted_compiles) == 2


def test_objects_are_moved_into_place_atomically_from_the_same_directory(tmp_path, monkeypatch):
    moves: list[tuple[Path, Path, bool]] = []
    real_replace = os.replace

    def recording_replace(source, destination):
        moves.append((Path(source), Path(destination), Path(destination).exists()))
        real_replace(source, destination)

    monkeypatch.setattr(compiler_module.os, "replace", recording_replace)
    library = compile_source(SOURCE.replace("42", "44"), cache_dir=tmp_path)
    assert [m[1] for m in moves] == [library.with_suffix(".c"), library]
    for source, destination, existed in moves:
        assert source.parent == destination.parent  # same file system: rename is atomic
        assert not existed


def test_compiler_error_raises_build_error_with_stderr_and_leaves_no_files(tmp_path):
    with pytest.raises(BuildError, match="C compiler failed") as err:
        compile_source("int broken( { return; }\n", cache_dir=tmp_path)
    assert err.value.rule == "build.compile"
    assert "error" in err.value.stderr
    assert not list(tmp_path.glob("*.so")) and not list(tmp_path.glob(".*tmp"))


# Two units of one library: the second calls a hidden function the first defines.
FIRST_UNIT = """
__attribute__((visibility("hidden"))) int tessel_test_base = 40;
__attribute__((visibility("hidden"))) int tessel_test_plus(int x) { return tessel_test_base + x; }
"""
SECOND_UNIT = """
__attribute__((visibility("hidden"))) int tessel_test_plus(int x);
int tessel_test_answer(void) { return tessel_test_plus(2); }
"""


def test_units_are_compiled_apart_and_linked_into_one_library(tmp_path, counted_compiles):
    library = compile_units([FIRST_UNIT, SECOND_UNIT], cache_dir=tmp_path, jobs=2)
    loaded = ctypes.CDLL(str(library))
    assert loaded.tessel_test_answer() == 42
    assert not hasattr(loaded, "tessel_test_plus")  # hidden: the units share it, no one else
    assert len(counted_compiles) == 2 and all("-c" in run for run in counted_compiles)
    assert compile_units([FIRST_UNIT, SECOND_UNIT], cache_dir=tmp_path, jobs=2) == library
    assert len(counted_compiles) == 2  # the library is cached as a whole


def test_a_unit_another_library_shares_is_not_compiled_again(tmp_path, counted_compiles):
    compile_units([FIRST_UNIT, SECOND_UNIT], cache_dir=tmp_path)
    changed = FIRST_UNIT.replace("= 40", "= 41")
    library = compile_units([changed, SECOND_UNIT], cache_dir=tmp_path)
    assert ctypes.CDLL(str(library)).tessel_test_answer() == 43
    assert len(counted_compiles) == 3  # the changed unit only; SECOND_UNIT's object is reused


def test_a_support_unit_is_built_at_o2_once_and_linked_into_each_library(
    tmp_path, counted_compiles
):
    library = compile_units([SECOND_UNIT], cache_dir=tmp_path, support_units=[FIRST_UNIT])
    assert ctypes.CDLL(str(library)).tessel_test_answer() == 42
    support = [run for run in counted_compiles if "-O2" in run]
    assert len(support) == 1 and "-O3" not in support[0]
    other = SECOND_UNIT.replace("tessel_test_answer", "tessel_test_other")
    library = compile_units([other], cache_dir=tmp_path, support_units=[FIRST_UNIT])
    assert ctypes.CDLL(str(library)).tessel_test_other() == 42
    assert len([run for run in counted_compiles if "-O2" in run]) == 1  # from the cache


def test_a_failing_unit_is_a_build_error_and_no_library(tmp_path):
    with pytest.raises(BuildError, match="C compiler failed") as err:
        compile_units([FIRST_UNIT, "int broken( {\n"], cache_dir=tmp_path, jobs=2)
    assert err.value.rule == "build.compile"
    assert not list(tmp_path.glob("*.so")) and not list(tmp_path.glob(".*tmp"))


def test_a_call_of_an_undeclared_function_is_a_build_error(tmp_path):
    # The unit would otherwise guess `int f()` for a function another unit defines.
    with pytest.raises(BuildError, match="C compiler failed") as err:
        source = "int tessel_test_call(void) { return tessel_test_elsewhere(); }\n"
        compile_source(source, cache_dir=tmp_path)
    assert "implicit declaration" in err.value.stderr


def test_missing_compiler_named_by_cc_is_a_build_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/tessel-cc")
    with pytest.raises(BuildError, match="cannot run the C compiler") as err:
        compile_source(SOURCE, cache_dir=tmp_path)
    assert err.value.rule == "build.no-compiler"


def test_the_flag_probes_answer_is_kept_for_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # an empty artifact cache
    probes = record_compiler_runs(monkeypatch, "probe.c")
    compiler = compiler_module.find_compiler()
    compiler_module.compiler_flags.cache_clear()
    try:
        first = compiler_module.compiler_flags(compiler)
        every = set(first) == set(compiler_module.BASE_FLAGS) | set(compiler_module.OPTIONAL_FLAGS)
        # Every optional flag in one probe; one a flag after it if the compiler refused one.
        probed = 1 if every else 1 + len(compiler_module.OPTIONAL_FLAGS)
        assert len(probes) == probed
        compiler_module.compiler_flags.cache_clear()  # as a new process would start
        assert compiler_module.compiler_flags(compiler) == first
        assert len(probes) == probed  # read back, not probed again
    finally:
        compiler_module.compiler_flags.cache_clear()


def test_a_compiler_refusing_one_optional_flag_builds_without_it(tmp_path, monkeypatch):
    refused = compiler_module.OPTIONAL_FLAGS[-1]
    wrapper = tmp_path / "picky-cc"
    real = " ".join(compiler_module.find_compiler())
    wrapper.write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = "{refused}" ] && exit 1; done\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("HOME", str(tmp_path))
    probes = record_compiler_runs(monkeypatch, "probe.c")
    try:
        flags = compiler_module.compiler_flags(compiler_module.find_compiler())
        library = compile_source(SOURCE, cache_dir=tmp_path / "objects")
    finally:
        compiler_module.compiler_flags.cache_clear()
    assert refused not in flags
    assert set(compiler_module.OPTIONAL_FLAGS) - {refused} <= set(flags)
    assert len(probes) == 1 + len(compiler_module.OPTIONAL_FLAGS)  # all at once, then each
    assert ctypes.CDLL(str(library)).tessel_test_answer() == 42


# A padded copy (fuzz seed 3, case 858, reduced): gcc 12.2 at -O3 with AVX2 vectorizes the outer
# loop with the inner one unrolled into three masked loads and gives all three the first's mask.
GROUPED_MASKED_LOADS = """
#include <stdint.h>
void tessel_test_padded_copy(const int32_t* restrict src, int32_t* restrict out) {
  int32_t local[80];
  for (int32_t i = 0; i < 16; ++i) local[i] = src[i];
  for (int32_t a = 0; a < 7; ++a)
    for (int32_t b = 0; b < 3; ++b)
      out[a * 3 + b] = (3 <= a * 3 + b && a * 3 + b < 19) ? local[a * 3 + b - 3] : 0;
}
"""


def test_flags_avoid_gccs_grouped_masked_load_miscompile(tmp_path):
    library = ctypes.CDLL(str(compile_source(GROUPED_MASKED_LOADS, cache_dir=tmp_path)))
    source = (ctypes.c_int32 * 16)(*range(1, 17))
    out = (ctypes.c_int32 * 21)()
    library.tessel_test_padded_copy(source, out)
    assert list(out) == [0, 0, 0, *range(1, 17), 0, 0]


def test_fuzz_case_with_a_padded_copy_over_an_inner_loop_of_three_runs_right_in_c():
    from tessel import te, topi
    from tessel.ir.target import Target
    from tessel.schedule import Schedule
    from tessel.script import tir as T
    from tessel.testing.fuzz.case import check_result

    a = te.placeholder((16, 1), "int32", name="A0")
    padded = topi.nn.pad(a, [0, 2], [0, 2], pad_value=0, name="T1")
    r = te.reduce_axis((0, 5), name="r")
    total = te.compute((16,), lambda i: te.sum(padded[i, r], axis=r), name="T2")
    mod3 = te.compute((16,), lambda i: te.floormod(total[i], 3), name="T3")
    out = topi.nn.pad(mod3, [2], [2], pad_value=0, name="T4")
    func = te.create_prim_func([a, out])
    sch = Schedule(func)
    sch.transform_layout(
        sch.get_block("T4"), ("write", 0), lambda i: (i + 1,), pad_value=T.int32(0)
    )
    sch.split(sch.get_loops(sch.get_block("T4"))[0], [None, 3])
    check_result(func, sch, target=Target())


def test_the_compiler_runs_without_a_preloaded_sanitizer_runtime(monkeypatch):
    """A process under AddressSanitizer (a fuzz worker) preloads libasan; the compiler's own
    processes must not run under it (each pass would start the sanitizer: twice as slow)."""
    from tessel.runtime.compiler import _compiler_environment  # noqa: PLC0415

    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so /opt/libkeep.so")
    env = _compiler_environment()
    assert env is not None and env["LD_PRELOAD"] == "/opt/libkeep.so"
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/gcc/x86_64-linux-gnu/12/libasan.so")
    env = _compiler_environment()
    assert env is not None and "LD_PRELOAD" not in env
    monkeypatch.delenv("LD_PRELOAD")
    assert _compiler_environment() is None
