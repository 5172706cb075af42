"""C vectors: Ramp/Broadcast, elementwise arithmetic, masks, Select, contiguous, strided and
predicated accesses, each checked against the reference interpreter on the same IR."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import LT, Broadcast, Cast, Ramp, Select
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
    a = (RNG.uniform(-20, 20, 32) if dtype.startswith(("float", "int")) else RNG.uniform(0, 60, 32))
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
        func, np.zeros(16, "int32"), np.zeros(16, "float32"))
    r = np.arange(16)
    np.testing.assert_array_equal(got_out, np.where(r < 5, 2 * r, r // 3) - 7)
    np.testing.assert_array_equal(got_flags, (r < 5).astype("float32"))


def test_strided_gather_and_scatter_run_per_lane():
    a_buf, b_buf = decl_buffer((64,), "float32", "A"), decl_buffer((64,), "float32", "B")
    func = prim_func("strided", (a_buf, b_buf), loops((4,), lambda i: BufferStore(
        b_buf, BufferLoad(a_buf, (_ramp(i, 8, 8),)), (_ramp(i * 2, 8, 8),))))
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
