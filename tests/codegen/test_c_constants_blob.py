"""Linked constants as a binary blob (docs/architecture.md §8): with link_params the C text declares
each constant as an aligned extern symbol that an `.incbin` of a binary file defines, so weights
never pass through the C parser; the compiler driver hashes the blob into its cache key."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tessel.runtime.compiler as compiler_module
from tessel.codegen import generate
from tessel.codegen.c_blob import ALIGNMENT, linked_constants
from tessel.driver import LOWERED_KIND, build
from tessel.ir.target import Target
from tessel.runtime import DataFile, compile_source
from tessel.script import tir as T
from tessel.testing.compiler_runs import record_compiler_runs
from tessel.tir import interpreter
from tessel.transform import lower

LINKED = Target(link_params=True)
N = 256
BIG = np.random.default_rng(3).standard_normal((N, N)).astype("float32")  # 256 KiB
OTHER = BIG * 2
ODD = np.array([3, -1, 4], "int8")  # 3 bytes: the next constant starts at the next boundary


@T.prim_func
def scale(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32")):
    W = T.allocate_const(BIG, "float32", [256, 256])
    for i, j in T.grid(256, 256):
        B[i, j] = A[i, j] * W[i, j]


@T.prim_func
def scale_other(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32")):
    W = T.allocate_const(OTHER, "float32", [256, 256])
    for i, j in T.grid(256, 256):
        B[i, j] = A[i, j] * W[i, j]


@T.prim_func
def mixed(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    k = T.allocate_const(ODD, "int8", [3])
    W = T.allocate_const(BIG[0], "float32", [256])
    for i in range(256):
        B[i] = A[i] * W[i] + T.Cast("float32", k[i % 3])


@pytest.fixture
def compiles(monkeypatch):
    """The compiler runs that build a shared object (not probes of flags)."""
    compiler_module.compiler_flags(compiler_module.find_compiler())
    return record_compiler_runs(monkeypatch)


def _interpreted(func, a):
    want = np.zeros_like(a)
    interpreter.run(func, a, want)
    return want


def _compiled(module, a):
    got = np.zeros_like(a)
    module(a.copy(), got)
    return got


def test_a_large_constant_is_linked_from_a_blob_not_c_text(tmp_path, compiles):
    c_source = generate(lower(scale, LINKED), LINKED)
    unlinked = generate(lower(scale), Target()).source
    # 256 KiB of weights as hex floats would be about 1.5 MB of text; the blob adds a few lines.
    assert len(c_source.source) < 16_000
    assert len(c_source.source) - len(unlinked) < 1_000
    assert ".incbin" in c_source.source
    assert "extern const unsigned char tessel_constant_0[]" in c_source.source
    (blob,) = c_source.data_files
    assert blob.name in c_source.source
    assert blob.data[: BIG.nbytes] == BIG.tobytes()
    a = np.random.default_rng(1).standard_normal((N, N)).astype("float32")
    first = build(scale, LINKED, cache_dir=tmp_path)
    np.testing.assert_array_equal(_compiled(first, a), _interpreted(scale, a))
    assert len(compiles) == 1
    # The shared object works when it comes from the cache, and the scratch directory is gone.
    second = build(scale, LINKED, cache_dir=tmp_path)
    assert second.library_path == first.library_path
    assert len(compiles) == 1
    np.testing.assert_array_equal(_compiled(second, a), a * BIG)
    assert sorted(p.suffix for p in tmp_path.iterdir() if p.is_file()) == [".c", ".so"]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [LOWERED_KIND]  # no scratch


def test_other_weights_make_another_library(tmp_path):
    a = np.ones((N, N), "float32")
    one = build(scale, LINKED, cache_dir=tmp_path)
    other = build(scale_other, LINKED, cache_dir=tmp_path)
    assert one.library_path != other.library_path
    np.testing.assert_array_equal(_compiled(one, a), BIG)
    np.testing.assert_array_equal(_compiled(other, a), OTHER)


def test_the_cache_key_hashes_the_data_files(tmp_path):
    source = (
        'extern const unsigned char blob[] __attribute__((visibility("hidden")));\n'
        '__asm__(".pushsection .rodata\\n.globl blob\\n.hidden blob\\nblob:\\n'
        '.incbin \\"data.bin\\"\\n.popsection\\n");\n'
        "int first_byte(void) { return blob[0]; }\n"
    )
    one = compile_source(source, cache_dir=tmp_path, data_files=(DataFile("data.bin", b"\x01"),))
    two = compile_source(source, cache_dir=tmp_path, data_files=(DataFile("data.bin", b"\x02"),))
    assert one != two
    for library, want in ((one, 1), (two, 2)):
        assert ctypes.CDLL(str(library)).first_byte() == want


def test_constants_of_odd_sizes_start_at_aligned_offsets():
    text, blob = linked_constants(("k", "w"), (ODD, BIG[0]))
    assert '.incbin \\"' + blob.name + '\\", 0, 3' in text
    assert '.incbin \\"' + blob.name + f'\\", {ALIGNMENT}, {BIG[0].nbytes}' in text
    assert len(blob.data) % ALIGNMENT == 0
    a = np.random.default_rng(2).standard_normal(N).astype("float32")
    np.testing.assert_array_equal(_compiled(build(mixed, LINKED), a), _interpreted(mixed, a))
