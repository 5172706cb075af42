"""T.reinterpret in C (c_reinterpret.py): the same bits as another type of equal width, scalar
and vector, checked against the interpreter on random bit patterns, NaN payloads and -0.0
included; types of different widths, bools and handles are refused."""

import textwrap

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np
import pytest

from tessel.driver import build
from tessel.runtime import BuildError
from tessel.script import parse
from tessel.tir import interpreter

HEADER = "from tessel.script import tir as T\n"
N = 16


def _parse(source: str):
    return parse(HEADER + textwrap.dedent(source))


def _elementwise(src: str, dst: str, loop: str = "T.serial") -> str:
    return f"""
        @T.prim_func
        def bitcast(A: T.Buffer(({N},), "{src}"), B: T.Buffer(({N},), "{dst}")):
            for i in {loop}({N}):
                B[i] = T.reinterpret(A[i], dtype="{dst}")
    """


def _random_bits(dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random bit patterns of `dtype`, with special float patterns planted at the front."""
    width = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, size=N * width, dtype=np.uint8)
    special = {  # quiet NaN with a payload, signalling NaN, -0.0, -inf, smallest subnormal
        2: [0x7E01, 0x7C01, 0x8000, 0xFC00, 0x0001],
        4: [0x7FC00123, 0x7F800001, 0x80000000, 0xFF800000, 0x00000001],
        8: [0x7FF8000000000ABC, 0x7FF0000000000001, 0x8000000000000000, 0xFFF0000000000000, 1],
    }[width]
    unsigned = np.dtype(f"u{width}")
    bits = raw.view(unsigned).copy()
    bits[: len(special)] = np.array(special, dtype=unsigned)
    return bits.view(dtype)


def _run_both(source: str, src: str, dst: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    func = _parse(source)
    a = _random_bits(src, np.random.default_rng(seed))
    expected, got = np.zeros(N, dst), np.zeros(N, dst)
    interpreter.run(func, a, expected)
    build(func)(a, got)
    return expected, got


def _same_bits(x: np.ndarray, y: np.ndarray) -> None:
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    np.testing.assert_array_equal(x.view(unsigned), y.view(unsigned))


PAIRS = [
    ("int32", "float32"), ("float32", "int32"), ("uint32", "float32"),
    ("int64", "float64"), ("float64", "uint64"),
    ("uint16", "float16"), ("float16", "int16"),
    ("uint16", "bfloat16"), ("bfloat16", "uint16"), ("float32", "uint32"),
]  # fmt: skip


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_scalar_reinterpret_keeps_every_bit_in_c_and_the_interpreter(src, dst):
    expected, got = _run_both(_elementwise(src, dst), src, dst, seed=len(src) + len(dst))
    _same_bits(expected, got)
    a = _random_bits(src, np.random.default_rng(len(src) + len(dst)))
    _same_bits(got, a.view(dst))  # exactly the input's bits: NaN payloads, -0.0 included


@pytest.mark.parametrize(
    ("src", "dst"), [("int32", "float32"), ("float64", "int64"), ("bfloat16", "int16")]
)
def test_reinterpret_in_a_vectorized_loop_matches_the_interpreter(src, dst):
    expected, got = _run_both(_elementwise(src, dst, "T.vectorized"), src, dst, seed=7)
    _same_bits(expected, got)


VECTOR = f"""
    @T.prim_func
    def bitcast(A: T.Buffer(({N},), "int32"), B: T.Buffer(({N},), "float32")):
        for i in range({N // 8}):
            B[T.Ramp(i * 8, 1, 8)] = T.reinterpret(A[T.Ramp(i * 8, 1, 8)], dtype="float32x8")
"""


def test_vector_reinterpret_is_one_memcpy_of_the_whole_vector():
    expected, got = _run_both(VECTOR, "int32", "float32", seed=11)
    _same_bits(expected, got)
    source = build(_parse(VECTOR)).source
    assert "__builtin_memcpy(&" in source and "tessel_float32x8" in source


LANES = f"""
    @T.prim_func
    def halves(A: T.Buffer(({N},), "int64"), B: T.Buffer(({2 * N},), "int32")):
        for i in range({N}):
            B[T.Ramp(i * 2, 1, 2)] = T.reinterpret(A[i], dtype="int32x2")
"""


def test_reinterpret_between_a_scalar_and_a_vector_of_equal_width():
    func = _parse(LANES)
    a = _random_bits("int64", np.random.default_rng(5))
    expected, got = np.zeros(2 * N, "int32"), np.zeros(2 * N, "int32")
    interpreter.run(func, a, expected)
    build(func)(a, got)
    np.testing.assert_array_equal(expected, got)
    np.testing.assert_array_equal(got, a.view("int32"))


@pytest.mark.parametrize(
    ("src", "dst"), [("int32", "float64"), ("float16", "float32"), ("int8", "bool")]
)
def test_reinterpret_without_common_bits_is_refused(src, dst):
    func = _parse(_elementwise(src, dst))
    with pytest.raises(BuildError) as err:
        build(func)
    assert err.value.rule == "codegen.reinterpret"
    assert str(np.dtype(src) if src != "int8" else "int8") in str(err.value)
    with pytest.raises(Exception, match="same total width"):
        interpreter.run(func, np.zeros(N, src), np.zeros(N, dst))


@pytest.mark.parametrize(("src", "dst"), [("int32", "float32"), ("float64", "int64")])
def test_a_vectorized_loop_reinterprets_whole_vectors(src, dst):
    # Elements of one width keep their bits in their lanes: VectorizeLoop treats the
    # reinterpret as lane-wise, so the loop becomes one vector reinterpret, not a scalar loop.
    source = build(_parse(_elementwise(src, dst, "T.vectorized"))).source
    assert f"tessel_{dst}x{N}" in source  # the whole loop is one vector
    assert "for (int32_t i = 0" not in source  # no scalar loop left
