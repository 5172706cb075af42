"""C vectors: Ramp/Broadcast, elementwise arithmetic, masks, Select, contiguous, strided and
predicated accesses, each checked against the reference interpreter on the same IR."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import LE, LT, Broadcast, Cast, Ramp, Select
from tessel.schedule import Schedule
from tessel.script import parse
from tessel.testing.ir_programs import loops, prim_func, seq
from tessel.tir import builtin, interpreter
from tessel.tir.buffer import BufferLoad, decl_buffer
from tessel.tir.stmt import BufferStore
from tessel.transform import lower

RNG = np.random.default_rng(0)


def _ramp(base, lanes: int, stride: int = 1) -> Ramp:
    return Ramp(B.convert(base), B.const(stride), lanes)


def _same_in_c_and_interpreter(func, *arrays: np.ndarray) -> list[np.ndarray]:
    expected = [a.copy() for a in arrays]
    interpreter.run(func, *expected)
    got = [a.copy() for a in arrays]
    build(func)(*got)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    return got


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint16", "int64"])
def test_contiguous_vector_load_arithmetic_and_store(dtype):
    a_buf, b_buf = decl_buffer((32,), dtype, "A"), decl_buffer((32,), dtype, "B")

    def body(i):
        index = _ramp(i * 8, 8)
        value = BufferLoad(a_buf, (index,)) * Broadcast(B.const(3, dtype), 8)
        value = value + BufferLoad(a_buf, (index,)) - Broadcast(B.const(1, dtype), 8)
        return BufferStore(b_buf, value, (index,))

    func = prim_func("vec", (a_buf, b_buf), loops((4,), body))
    source = generate(lower(func)).source
    assert "typedef" in source and f"tessel_{dtype}x8" in source and "__builtin_memcpy" in source
    a = RNG.uniform(-20, 20, 32) if dtype.startswith(("float", "int")) else RNG.uniform(0, 60, 32)
    (_, b) = _same_in_c_and_interpreter(func, a.astype(dtype), np.zeros(32, dtype))
    if dtype.startswith("float"):
        np.testing.assert_allclose(b, a.astype(dtype) * 4 - 1, rtol=1e-6)


def test_ramp_values_comparisons_select_and_floor_division():
    out, flags = decl_buffer((16,), "int32", "out"), decl_buffer((16,), "float32", "flags")
    ramp = _ramp(0, 16)
    cond = LT(ramp, Broadcast(B.const(5), 16))
    value = Select(cond, ramp * Broadcast(B.const(2), 16), ramp // Broadcast(B.const(3), 16))
    stores = seq(
        BufferStore(out, value - Broadcast(B.const(7), 16), (ramp,)),
        BufferStore(flags, Cast("float32x16", cond), (ramp,)),
    )
    func = prim_func("sel", (out, flags), stores)
    got_out, got_flags = _same_in_c_and_interpreter(
        func, np.zeros(16, "int32"), np.zeros(16, "float32")
    )
    r = np.arange(16)
    np.testing.assert_array_equal(got_out, np.where(r < 5, 2 * r, r // 3) - 7)
    np.testing.assert_array_equal(got_flags, (r < 5).astype("float32"))


def test_strided_gather_and_scatter_run_per_lane():
    a_buf, b_buf = decl_buffer((64,), "float32", "A"), decl_buffer((64,), "float32", "B")
    func = prim_func(
        "strided",
        (a_buf, b_buf),
        loops(
            (4,),
            lambda i: BufferStore(
                b_buf, BufferLoad(a_buf, (_ramp(i, 8, 8),)), (_ramp(i * 2, 8, 8),)
            ),
        ),
    )
    a = RNG.uniform(-1, 1, 64).astype("float32")
    _same_in_c_and_interpreter(func, a, np.zeros(64, "float32"))


def test_predicated_store_and_load_touch_only_enabled_lanes():
    a_buf, b_buf = decl_buffer((13,), "float32", "A"), decl_buffer((13,), "float32", "B")

    def body(i):
        index = _ramp(i * 4, 4)
        mask = LT(index, Broadcast(B.const(13), 4))
        value = builtin.math_unary("exp", BufferLoad(a_buf, (index,), mask))
        return BufferStore(b_buf, value, (index,), mask)

    func = prim_func("masked", (a_buf, b_buf), loops((4,), body))
    a = RNG.uniform(-1, 1, 13).astype("float32")
    (_, b) = _same_in_c_and_interpreter(func, a, np.full(13, np.nan, "float32"))
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)


# ---------------------------------------------------------------- predicated vectors


def _scale(n: int, dtype: str, vector_length=None, split=False):
    """`B = A * 3 + 1` over `n` elements, vectorized directly or after a split."""
    func = parse(f"""
@T.prim_func
def scale(A: T.Buffer(({n},), "{dtype}"), B: T.Buffer(({n},), "{dtype}")):
    for i in range({n}):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.{dtype}(3) + T.{dtype}(1)
""")
    sch = Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    if split:
        _, i = sch.split(i, [None, vector_length])
        sch.vectorize(i)
    else:
        sch.vectorize(i, vector_length=vector_length)
    return sch.func


def _entry(source: str) -> str:
    return source[source.index("TESSEL_EXPORT int32_t") :]


@pytest.mark.parametrize(
    ("n", "vector_length", "split"), [(127, 8, True), (127, 8, False), (100, None, False)]
)
def test_masked_vector_code_has_no_scalar_tail_and_matches_numpy(n, vector_length, split):
    func = _scale(n, "float32", vector_length, split)
    body = _entry(generate(lower(func)).source)
    lanes = vector_length or 8  # float32 chunks of 32 bytes
    assert re.findall(r"for \(int32_t (?!tessel_)(\w+)", body) == ["i_0"]  # the chunks only
    assert f"tessel_float32x{lanes} tessel_v" in body
    # The whole chunks copy whole vectors in a loop of their own (PeelVectorTails); the last
    # one, after it, is a masked copy, tested on its last lane.
    whole = n // lanes
    assert f"for (int32_t i_0 = 0; i_0 < {whole}; ++i_0)" in body
    assert f"(i_0 * {lanes}) + {lanes - 1})" not in body  # no lane test in the loop
    start = whole * lanes  # the last vector's first element; its last lane's test:
    assert f"if (({start + lanes - 1} < {n}))" in body
    assert f"tessel_masked_store4x{lanes}((B + {start})" in body
    assert f"tessel_masked_load4x{lanes}(&tessel_v, (A + {start})" in body
    a = RNG.uniform(-1, 1, n).astype("float32")
    (_, b) = _same_in_c_and_interpreter(func, a, np.zeros(n, "float32"))
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(("n", "vector_length"), [(6, None), (100, None), (127, 8), (5, 32)])
def test_masked_lanes_never_store_past_the_buffer(n, vector_length, dtype):
    func = _scale(n, dtype, vector_length)
    module = build(func)
    # The arguments are views of longer arrays whose tails a stray lane would overwrite.
    a_full, b_full = np.full(n + 64, 7, dtype), np.full(n + 64, 5, dtype)
    a_full[:n] = np.arange(n)
    module(a_full[:n], b_full[:n])
    np.testing.assert_array_equal(b_full[:n], np.arange(n, dtype=dtype) * 3 + 1)
    np.testing.assert_array_equal(b_full[n:], np.full(64, 5, dtype))


@pytest.mark.parametrize(
    ("lanes", "test"),
    [
        (4, "((uint32_t)(tessel_m) == 0x01010101ULL)"),
        (8, "((uint64_t)(tessel_m) == 0x0101010101010101ULL)"),
        (32, "(((tessel_uint64x4)(tessel_m))[0] == 0x0101010101010101ULL && "),
    ],
)
def test_a_mask_of_another_form_is_tested_by_value(lanes, test):
    """Whether all lanes are on is read from the mask's bits, not through its address (an
    inlined helper taking it made gcc's AddressSanitizer report its store: seed 21, 19027)."""
    a_buf, m_buf = decl_buffer((64,), "float32", "A"), decl_buffer((64,), "int32", "M")
    b_buf = decl_buffer((64,), "float32", "B")

    def body(i):
        index = _ramp(i * lanes, lanes)
        mask = LT(Broadcast(B.const(0), lanes), BufferLoad(m_buf, (index,)))
        return BufferStore(b_buf, BufferLoad(a_buf, (index,), mask), (index,), mask)

    func = prim_func("data_mask", (a_buf, m_buf, b_buf), loops((64 // lanes,), body))
    assert test in generate(lower(func)).source
    mask = np.ones(64, "int32")
    mask[[33, 40, 41, 63]] = 0  # the first chunks copy whole vectors, the others go by lane
    a = RNG.uniform(-1, 1, 64).astype("float32")
    (_, _, b) = _same_in_c_and_interpreter(func, a, mask, np.full(64, -9, "float32"))
    np.testing.assert_array_equal(b, np.where(mask > 0, a, np.float32(-9)))


def test_a_less_or_equal_ramp_mask_is_tested_on_its_last_lane():
    a_buf, b_buf = decl_buffer((14,), "int32", "A"), decl_buffer((14,), "int32", "B")

    def body(i):
        index = _ramp(i * 4, 4)
        mask = LE(index, Broadcast(B.const(12), 4))
        return BufferStore(
            b_buf, BufferLoad(a_buf, (index,), mask) + Broadcast(B.const(1), 4), (index,), mask
        )

    func = prim_func("le_mask", (a_buf, b_buf), loops((4,), body))
    source = generate(lower(func)).source
    assert "(tessel_m) ==" not in source.split("TESSEL_EXPORT int32_t")[-1]
    assert "(15 <= 12)" in source  # the fourth vector's last lane; the first three are whole
    a = np.arange(14, dtype="int32")
    (_, b) = _same_in_c_and_interpreter(func, a, np.zeros(14, "int32"))
    np.testing.assert_array_equal(b, np.concatenate([a[:13] + 1, [0]]))


@pytest.mark.parametrize(
    "form", ["max(x, 0)", "max(0, x)", "min(x, 6)", "min(6, x)", "clip", "max(x, y)"]
)
def test_vector_min_max_with_a_number_keep_nan_and_signed_zero_bit_for_bit(form):
    """Min/max of a vector and a number compile to one compare and select; NaN still
    propagates and of equal operands the second is still the result (relu(-0.0) is +0.0),
    bit for bit as the interpreter, as the general form (two vectors) does."""
    from tessel import te, topi

    x = te.placeholder((3, 48), name="x")
    y = te.placeholder((3, 48), name="y")
    zero, six = te.const(0.0, "float32"), te.const(6.0, "float32")
    body = {
        "max(x, 0)": lambda i, j: te.max(x[i, j], zero),
        "max(0, x)": lambda i, j: te.max(zero, x[i, j]),
        "min(x, 6)": lambda i, j: te.min(x[i, j], six),
        "min(6, x)": lambda i, j: te.min(six, x[i, j]),
        "clip": lambda i, j: topi.clip(x, 0.0, 6.0)[i, j],
        "max(x, y)": lambda i, j: te.max(x[i, j], y[i, j]),
    }[form]
    out = te.compute((3, 48), body, name="out")
    func = te.create_prim_func([x, y, out])
    sch = Schedule(func)
    *_, inner = sch.get_loops(sch.get_block("out"))
    sch.vectorize(inner)
    values = np.random.default_rng(0).standard_normal((2, 3, 48)).astype(np.float32) * 8
    specials = [np.nan, -0.0, 0.0, 6.0, -np.inf, np.inf, 6.0, -0.0]
    values[0, 0, :8] = specials
    values[1, 0, :8] = specials[::-1]
    got, want = np.empty((3, 48), np.float32), np.empty((3, 48), np.float32)
    build(sch.func)(values[0], values[1], got)
    interpreter.run(func, values[0], values[1], want)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint16", "int64"])
def test_vector_select_is_a_blend_bit_for_bit(dtype):
    """A select under a vector condition compiles to a blend under a whole-lane mask, not a lane
    loop; NaN and signed zeros pass through bit for bit, as in the interpreter."""
    a_buf, c_buf = decl_buffer((32,), dtype, "A"), decl_buffer((32,), dtype, "C")
    out = decl_buffer((32,), dtype, "out")

    def body(i):
        index = _ramp(i * 16, 16)
        a, c = BufferLoad(a_buf, (index,)), BufferLoad(c_buf, (index,))
        chosen = Select(LT(Broadcast(B.const(0, dtype), 16), a), a, c)
        return BufferStore(out, chosen, (index,))

    func = prim_func("blend", (a_buf, c_buf, out), loops((2,), body))
    source = generate(lower(func)).source
    assert "tessel_m = -__builtin_convertvector(" in source
    assert "tessel_r[tessel_l] = (" not in source  # no lane loop
    rng = np.random.default_rng(3)
    a = rng.uniform(-50, 50, 32).astype(dtype)
    c = rng.uniform(0, 50, 32).astype(dtype)
    if dtype.startswith("float"):
        a[:4], c[:4] = [np.nan, -0.0, 1.0, -1.0], [1.0, 2.0, np.nan, -0.0]
    got, want = np.empty(32, dtype), np.empty(32, dtype)
    build(func)(a, c, got)
    interpreter.run(func, a, c, want)
    np.testing.assert_array_equal(
        got.view(f"u{np.dtype(dtype).itemsize}"), want.view(f"u{np.dtype(dtype).itemsize}")
    )
