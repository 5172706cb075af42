"""Loads of every second element (stride 2, 8 or 16 lanes of 4 bytes) are two masked contiguous
loads and one shuffle, not a gather: same results as the interpreter with and without a
predicate, and no byte read past the last element read (a guard page after the buffer)."""

import subprocess
import sys
import textwrap

import pytest

from tessel.driver import generate_c_source
from tessel.script import parse
from tessel.testing import check_same_results

STRIDED = """
@T.prim_func
def strided(A: T.Buffer(({source},), "{dtype}"), B: T.Buffer(({extent},), "{dtype}")):
    for i in T.vectorized({extent}):
        with T.block("B"):
            vi = T.axis.spatial({extent}, i)
            B[vi] = A[vi * 2 + {offset}]
"""

GUARDED = """
@T.prim_func
def guarded(A: T.Buffer((40,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.vectorized(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = T.if_then_else(vi % 3 != 1, A[vi * 2 + 1], T.float32(-1))
"""


def _strided(extent, offset, dtype="float32"):
    return parse(
        STRIDED.format(extent=extent, offset=offset, dtype=dtype, source=2 * extent - 1 + offset)
    )


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(("extent", "offset"), [(16, 0), (16, 1), (8, 0), (13, 1), (29, 0)])
def test_stride_two_loads_match_the_interpreter(extent, offset, dtype):
    func = _strided(extent, offset, dtype)
    check_same_results(func, func)
    assert "__builtin_shufflevector(tessel_a, tessel_b" in generate_c_source(func)


def test_lanes_disabled_by_a_condition_read_nothing_and_match():
    func = parse(GUARDED)
    check_same_results(func, func)
    source = generate_c_source(func)
    assert "tessel_masked_load4x16(&tessel_a" in source


def test_other_strides_and_widths_keep_the_lane_loop():
    source = generate_c_source(
        parse(STRIDED.format(extent=16, offset=0, dtype="float64", source=31))
    )
    assert "__builtin_shufflevector(tessel_a" not in source


GUARD_PAGE = textwrap.dedent("""
    import ctypes, mmap
    import numpy as np
    from tessel.driver import build
    from tessel.script import parse
    page = mmap.PAGESIZE
    memory = mmap.mmap(-1, 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(base + page, page, 0) == 0  # PROT_NONE: a read past the end faults
    whole = np.frombuffer(memory, np.float32, count=page // 4)
    a = whole[page // 4 - 31:]  # 31 floats ending at the guard page
    a[:] = np.arange(31, dtype=np.float32)
    module = build(parse(SOURCE))
    b = np.zeros(16, np.float32)
    module(a, b)
    assert (b == np.arange(0, 31, 2, dtype=np.float32)).all(), b
    print("ok")
""")


def test_no_read_past_the_last_element_read():
    # The last lane reads A[30], the buffer's last element: the second load's span ends there.
    source = STRIDED.format(extent=16, offset=0, dtype="float32", source=31)
    program = f"SOURCE = {source!r}\n" + GUARD_PAGE
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
