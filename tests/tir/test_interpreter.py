"""The reference interpreter on whole kernels, compared with NumPy on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from test_interpreter_programs import (
    REDUCE,
    SPATIAL,
    block,
    buffer,
    const,
    grid,
    matmul,
    prim_func,
    root,
    seq,
    store,
)

from tessel.ir import builders
from tessel.ir.expr import Max, Min
from tessel.tir import builtin
from tessel.tir.interpreter import compile_prim_func, run

RNG = np.random.default_rng(2024)


def test_matmul_float32_matches_numpy():
    a, b = (RNG.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    c = np.full((16, 16), np.nan, np.float32)  # init must overwrite whatever is there
    run(matmul(16), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_int32_wraps_like_numpy():
    a, b = (RNG.integers(-(2**31), 2**31, (8, 8), dtype=np.int32) for _ in range(2))
    c = np.zeros((8, 8), np.int32)
    run(matmul(8, "int32"), a, b, c)
    np.testing.assert_array_equal(c, a @ b)  # wrap-around is order independent


def test_compiled_function_runs_twice_with_fresh_state():
    compiled = compile_prim_func(matmul(4))
    for _ in range(2):
        a, b = (RNG.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
        c = np.zeros((4, 4), np.float32)
        compiled(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


def _conv2d_nchw(n, ci, h, w, co, kh, kw):
    data, weight = buffer("data", (n, ci, h, w)), buffer("weight", (co, ci, kh, kw))
    oh, ow = h - kh + 1, w - kw + 1
    out = buffer("out", (n, co, oh, ow))
    axes = lambda b, k, y, x, c, r, s: [  # noqa: E731
        (SPATIAL, n, b),
        (SPATIAL, co, k),
        (SPATIAL, oh, y),
        (SPATIAL, ow, x),
        (REDUCE, ci, c),
        (REDUCE, kh, r),
        (REDUCE, kw, s),
    ]
    body = grid(
        (n, co, oh, ow, ci, kh, kw),
        lambda *loops: block(
            "conv",
            axes(*loops),
            lambda vb, vk, vy, vx, vc, vr, vs: store(
                out,
                (vb, vk, vy, vx),
                out[vb, vk, vy, vx] + data[vb, vc, vy + vr, vx + vs] * weight[vk, vc, vr, vs],
            ),
            lambda vb, vk, vy, vx, *_: store(out, (vb, vk, vy, vx), 0),
        ),
        names="bkyxcrs",
    )
    return prim_func([data, weight, out], root(body))


def test_conv2d_nchw_matches_numpy():
    data = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    weight = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    out = np.zeros((2, 4, 5, 5), np.float32)
    run(_conv2d_nchw(2, 3, 7, 6, 4, 3, 2), data, weight, out)
    windows = np.lib.stride_tricks.sliding_window_view(data, (3, 2), axis=(2, 3))
    expected = np.einsum("bcyxrs,kcrs->bkyx", windows, weight)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def _softmax(m, n):
    x, y = buffer("X", (m, n)), buffer("Y", (m, n))
    row_max, row_sum = buffer("row_max", (m,)), buffer("row_sum", (m,))
    max_block = grid(
        (m, n),
        lambda i, j: block(
            "max",
            [(SPATIAL, m, i), (REDUCE, n, j)],
            lambda vi, vj: store(row_max, (vi,), Max(row_max[vi], x[vi, vj])),
            lambda vi, vj: store(row_max, (vi,), const(float("-inf"))),
        ),
    )
    sum_block = grid(
        (m, n),
        lambda i, j: block(
            "sum",
            [(SPATIAL, m, i), (REDUCE, n, j)],
            lambda vi, vj: store(
                row_sum, (vi,), row_sum[vi] + builtin.math_unary("exp", x[vi, vj] - row_max[vi])
            ),
            lambda vi, vj: store(row_sum, (vi,), 0),
        ),
    )
    norm_block = grid(
        (m, n),
        lambda i, j: block(
            "norm",
            [(SPATIAL, m, i), (SPATIAL, n, j)],
            lambda vi, vj: store(
                y, (vi, vj), builtin.math_unary("exp", x[vi, vj] - row_max[vi]) / row_sum[vi]
            ),
        ),
    )
    body = root(seq(max_block, sum_block, norm_block), alloc_buffers=[row_max, row_sum])
    return prim_func([x, y], body)


def test_softmax_with_intermediate_buffers_matches_numpy():
    x = (RNG.standard_normal((5, 11)) * 4).astype(np.float32)
    y = np.zeros_like(x)
    run(_softmax(5, 11), x, y)
    shifted = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, shifted / shifted.sum(axis=1, keepdims=True), rtol=1e-5)


def _layer_norm(m, n, eps=1e-5):
    x, y = buffer("X", (m, n)), buffer("Y", (m, n))
    mean, var = buffer("mean", (m,)), buffer("var", (m,))
    inv_n = const(1.0 / n)

    def reduction(name, target, term):
        return grid(
            (m, n),
            lambda i, j: block(
                name,
                [(SPATIAL, m, i), (REDUCE, n, j)],
                lambda vi, vj: store(target, (vi,), target[vi] + term(vi, vj) * inv_n),
                lambda vi, vj: store(target, (vi,), 0),
            ),
        )

    centred = lambda vi, vj: x[vi, vj] - mean[vi]  # noqa: E731
    normalise = grid(
        (m, n),
        lambda i, j: block(
            "normalise",
            [(SPATIAL, m, i), (SPATIAL, n, j)],
            lambda vi, vj: store(
                y, (vi, vj), centred(vi, vj) * builtin.math_unary("rsqrt", var[vi] + const(eps))
            ),
        ),
    )
    body = seq(
        reduction("mean", mean, lambda vi, vj: x[vi, vj]),
        reduction("var", var, lambda vi, vj: centred(vi, vj) * centred(vi, vj)),
        normalise,
    )
    return prim_func([x, y], root(body, alloc_buffers=[mean, var]))


def test_layer_norm_two_pass_reduction_matches_numpy():
    x = (RNG.standard_normal((3, 17)) * 2 + 1).astype(np.float32)
    y = np.zeros_like(x)
    run(_layer_norm(3, 17), x, y)
    mean = x.mean(axis=1, keepdims=True)
    expected = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_elementwise_chain_with_broadcast_matches_numpy():
    a, bias, c = buffer("A", (6, 5)), buffer("bias", (5,)), buffer("C", (6, 5))
    body = grid(
        (6, 5),
        lambda i, j: block(
            "relu",
            [(SPATIAL, 6, i), (SPATIAL, 5, j)],
            lambda vi, vj: store(
                c, (vi, vj), Min(Max(a[vi, vj] * const(2.0) + bias[vj], const(0.0)), const(1.5))
            ),
        ),
    )
    a_np = RNG.standard_normal((6, 5)).astype(np.float32)
    bias_np = RNG.standard_normal(5).astype(np.float32)
    c_np = np.zeros((6, 5), np.float32)
    run(prim_func([a, bias, c], root(body)), a_np, bias_np, c_np)
    np.testing.assert_array_equal(c_np, np.clip(a_np * np.float32(2) + bias_np, 0, 1.5))


def test_float32_math_stays_in_float32():
    x, y = buffer("x", (64,)), buffer("y", (64,))
    body = grid(
        (64,),
        lambda i: store(
            y, (i,), builtin.math_unary("exp", x[i]) * const(3.0) + builders.const(0.1, "float32")
        ),
    )
    x_np = RNG.standard_normal(64).astype(np.float32)
    y_np = np.zeros(64, np.float32)
    run(prim_func([x, y], body), x_np, y_np)
    np.testing.assert_array_equal(y_np, np.exp(x_np) * np.float32(3) + np.float32(0.1))


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_float_arithmetic_is_done_in_the_buffer_dtype(dtype):
    x, y = buffer("x", (32,), dtype), buffer("y", (32,), dtype)
    body = grid((32,), lambda i: store(y, (i,), x[i] * x[i] / const(3.0, dtype) - x[i]))
    x_np = RNG.standard_normal(32).astype(dtype)
    y_np = np.zeros(32, dtype)
    run(prim_func([x, y], body), x_np, y_np)
    np.testing.assert_array_equal(y_np, x_np * x_np / np.array(3, dtype) - x_np)
