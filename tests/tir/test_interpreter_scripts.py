"""The interpreter on TVMScript kernels (parsed with tessel.script), compared with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.tir.interpreter import InterpreterError, run

script = pytest.importorskip("tessel.script")
RNG = np.random.default_rng(3)


def test_reduction_over_a_symbolic_shape():
    func = script.parse("""
@T.prim_func
def main(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 8), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i, k in T.grid(n, 8):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + T.exp(A[vi, vk])
""")
    a, b = RNG.standard_normal((5, 8)).astype(np.float32), np.zeros(5, np.float32)
    run(func, a, b)
    np.testing.assert_allclose(b, np.exp(a).sum(axis=1), rtol=1e-5)


def test_lowered_style_kernel_with_allocate_and_predicated_vectors():
    func = script.parse("""
@T.prim_func
def main(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    tmp = T.allocate([12], "float32", "global")
    for k in range(3):
        lanes = T.Ramp(k * 4, 1, 4)
        in_range = lanes < T.Broadcast(10, 4)
        tmp[lanes] = A.vload([lanes], predicate=in_range) + T.Broadcast(T.float32(1), 4)
    for k in range(10):
        B[k] = tmp[k] * T.float32(2)
""")
    a, b = RNG.standard_normal(10).astype(np.float32), np.zeros(10, np.float32)
    run(func, a, b)
    np.testing.assert_array_equal(b, (a + 1) * 2)


def test_int8_kernel_with_casts_and_truncating_division():
    func = script.parse("""
@T.prim_func
def main(A: T.Buffer((6,), "int8"), B: T.Buffer((6,), "int32"), C: T.Buffer((6,), "int32")):
    for i in range(6):
        B[i] = T.truncdiv(T.Cast("int32", A[i]) * 3, 2)
        C[i] = T.Cast("int32", A[i] * T.int8(3)) // 2
""")
    a = np.array([-128, -7, -1, 0, 5, 127], np.int8)
    b, c = np.zeros(6, np.int32), np.zeros(6, np.int32)
    run(func, a, b, c)
    np.testing.assert_array_equal(b, np.fix(a.astype(np.int32) * 3 / 2).astype(np.int32))
    np.testing.assert_array_equal(c, (a * np.int8(3)).astype(np.int32) // 2)


def test_buffer_constraint_with_assume_and_undef_padding():
    func = script.parse("""
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A_assumption"):
            vi = T.axis.spatial(8, i)
            T.evaluate(T.assume(vi < 6 or A[vi] == T.float32(0)))
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.if_then_else(vi < 6, A[vi] + T.float32(1), T.undef())
""")
    a, b = np.array([1, 2, 3, 4, 5, 6, 0, 0], np.float32), np.full(8, 7.0, np.float32)
    run(func, a, b)
    np.testing.assert_array_equal(b, [2, 3, 4, 5, 6, 7, 7, 7])
    a[7] = 1.0
    with pytest.raises(InterpreterError, match=r"T\.assume"):
        run(func, a, b)
