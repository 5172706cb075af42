"""bfloat16 in C: stored as its bits (uint16_t) and converted through float32, rounding to
nearest even with NaN kept (quiet), bit for bit as ml_dtypes and the interpreter convert, in
scalar and vectorized code; arithmetic on bfloat16 itself is refused."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.schedule import Schedule
from tessel.script import parse
from tessel.support.errors import UserError
from tessel.tir import interpreter

BF16 = ml_dtypes.bfloat16


def _float32_bits(count: int) -> np.ndarray:
    """float32 values from random bit patterns (every exponent: subnormals, NaN payloads) and
    the cases rounding can get wrong: ties to even either way, just off a tie, the largest
    finite values (some round to inf), inf, NaN of both signs and kinds, signed zeros."""
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2**32, count - 64, dtype=np.uint64).astype(np.uint32)
    upper = rng.integers(0, 2**16, 8, dtype=np.uint64).astype(np.uint32) << 16
    ties = np.concatenate([upper | 0x8000, upper | 0x7FFF, upper | 0x8001,
                           (upper | 0x10000) | 0x8000])  # odd and even upper halves  # fmt: skip
    special = np.array(
        [
            0x7F7FFFFF,
            0x7F7F7FFF,
            0x7F7F8000,
            0xFF7FFFFF,  # the largest floats: inf, max, tie, -inf
            0x7F800000,
            0xFF800000,
            0x7FC00000,
            0xFFC00000,  # inf, -inf, quiet NaN of each sign
            0x7F800001,
            0xFFA12345,
            0x7FFFFFFF,
            0x00000001,  # signalling NaN, payloads, subnormal
            0x80008000,
            0x00007FFF,
            0x00000000,
            0x80000000,  # subnormal ties, signed zeros
            0x3F808000,
            0x3F818000,
            0x3F800001,
            0x3F80FFFF,  # ties to even at 1.0, round ups
            0x007FFFFF,
            0x00800000,
            0x807F8000,
            0x4B7F8000,
            0x3DCCCCCD,
            0xBF8CCCCD,
            0x477FE000,
            0x38000000,
            0x7F000000,
            0x00400000,
            0x80400001,
            0x3EAAAAAB,
        ],
        dtype=np.uint32,
    )
    return np.concatenate([special, ties, random]).view(np.float32)


def _round_trip(n: int, lanes: int | None) -> object:
    """float32 -> bfloat16 (stored in M) -> float32, each loop vectorized by `lanes` after a
    split (a predicated tail where `lanes` does not divide `n`)."""
    func = parse(f"""
@T.prim_func
def round_trip(A: T.Buffer(({n},), "float32"), M: T.Buffer(({n},), "bfloat16"),
               B: T.Buffer(({n},), "float32")):
    for i in range({n}):
        with T.block("M"):
            vi = T.axis.remap("S", [i])
            M[vi] = T.Cast("bfloat16", A[vi])
    for i in range({n}):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.Cast("float32", M[vi])
""")
    if lanes is None:
        return func
    sch = Schedule(func)
    for name in ("M", "B"):
        (loop,) = sch.get_loops(sch.get_block(name))
        _, inner = sch.split(loop, [None, lanes])
        sch.vectorize(inner)
    return sch.func


@pytest.mark.parametrize(("n", "lanes"), [(1000, None), (1000, 16), (997, 8), (67, 4)])
def test_float32_bfloat16_round_trip_matches_ml_dtypes_bit_for_bit(n, lanes):
    func = _round_trip(n, lanes)
    entry = generate_c_source(func).split("TESSEL_EXPORT int32_t")[-1]
    if lanes is None:
        assert "tessel_f32_to_bf16(" in entry
        assert "tessel_bf16_to_f32(" in entry
    else:  # lane-wise vector conversions, not a scalar helper per lane
        assert f"tessel_bfloat16x{lanes}" in entry
        assert "tessel_f32_to_bf16(" not in entry
    x = _float32_bits(n)
    with np.errstate(all="ignore"):
        expected = x.astype(BF16)
    for run in (lambda *a: interpreter.run(func, *a), lambda *a: build(func)(*a)):
        stored, back = np.zeros(n, BF16), np.zeros(n, np.float32)
        run(x, stored, back)
        np.testing.assert_array_equal(stored.view(np.uint16), expected.view(np.uint16))
        np.testing.assert_array_equal(
            back.view(np.uint32), expected.view(np.uint16).astype(np.uint32) << 16
        )


def _cast_pair(src: str, dst: str, n: int, lanes: int | None) -> object:
    func = parse(f"""
@T.prim_func
def casts(A: T.Buffer(({n},), "{src}"), B: T.Buffer(({n},), "{dst}")):
    for i in range({n}):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.Cast("{dst}", A[vi])
""")
    if lanes is None:
        return func
    sch = Schedule(func)
    (loop,) = sch.get_loops(sch.get_block("B"))
    sch.vectorize(sch.split(loop, [None, lanes])[1])
    return sch.func


_VALUES = {
    "int8": np.array([-128, -7, 0, 1, 5, 77, 127, 100], np.int8),
    "int32": np.array(
        [0, -3, 257, 2**24 + 1, 2**24 + 2**16 + 1, -(2**31), 2**31 - 1, 999], np.int32
    ),
    "float64": np.array([1 + 2**-8 + 2**-30, -1e39, 1e-45, np.nan, -0.0, 3.14159, 1e300, 65504]),
    "float16": np.array([65504, -0.0, 6e-8, np.inf, np.nan, 1.0009765625, 0.1, -3], np.float16),
    "bool": np.array([True, False] * 4),
}
_BF16_VALUES = np.array([1.5, -2.75, 0.0, -0.0, 100.0, -127.0, 3.0, 126.5], BF16)


@pytest.mark.parametrize("lanes", [None, 8])
@pytest.mark.parametrize("other", ["int8", "int32", "float64", "float16", "bool"])
def test_casts_between_bfloat16_and_other_types_go_through_float32(other, lanes):
    values = np.tile(_VALUES[other], 3)
    with np.errstate(all="ignore"):
        expected = values.astype(np.float32).astype(BF16)
    func = _cast_pair(other, "bfloat16", values.size, lanes)
    for run in (lambda *a: interpreter.run(func, *a), lambda *a: build(func)(*a)):
        out = np.zeros(values.size, BF16)
        run(values, out)
        np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))
    # Back: the values are in range of every type (a cast of one out of range is undefined).
    source = np.tile(_BF16_VALUES, 3)
    with np.errstate(all="ignore"):
        expected = source.astype(np.float32).astype(other)
    func = _cast_pair("bfloat16", other, source.size, lanes)
    for run in (lambda *a: interpreter.run(func, *a), lambda *a: build(func)(*a)):
        out = np.zeros(source.size, other)
        run(source, out)
        np.testing.assert_array_equal(out, expected)


def test_bfloat16_constants_and_scalar_arguments_are_rounded_like_a_cast():
    func = parse("""
@T.prim_func
def fill(A: T.Buffer((4,), "bfloat16"), s: T.bfloat16):
    A[0] = T.bfloat16(1.1)
    A[1] = T.bfloat16("inf")
    A[2] = T.bfloat16(3.3895313892515355e38)
    A[3] = s
""")
    expected = np.array([1.1, np.inf, 3.3895313892515355e38, 0.1], np.float32).astype(BF16)
    for run in (lambda *a: interpreter.run(func, *a), lambda *a: build(func)(*a)):
        out = np.zeros(4, BF16)
        run(out, BF16(0.1))
        np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize(
    "body",
    [
        "B[i] = A[i] + A[i]",
        "B[i] = T.exp(A[i])",
        "B[i] = T.max(A[i], T.bfloat16(0))",
        "B[i] = T.Select(A[i] < T.bfloat16(1), A[i], T.bfloat16(0))",
    ],
)
def test_arithmetic_on_bfloat16_is_refused_not_done_on_its_bits(body):
    func = parse(f"""
@T.prim_func
def compute(A: T.Buffer((8,), "bfloat16"), B: T.Buffer((8,), "bfloat16")):
    for i in range(8):
        {body}
""")
    with pytest.raises(UserError, match="arithmetic on bfloat16") as err:
        generate_c_source(func)
    assert err.value.rule == "codegen.bfloat16"
