"""Compiled C against NumPy: whole programs built with the Python API, run on random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir import builders as B
from tessel.testing.ir_programs import block, loops, matmul, prim_func, root, seq, store
from tessel.tir import builtin
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import ForKind

RNG = np.random.default_rng(0)


def _floats(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def test_float32_matmul_with_init_and_reduction_block_matches_numpy():
    a, b = _floats(127, 127), _floats(127, 127)
    c = np.full((127, 127), np.nan, "float32")  # the init must overwrite whatever is there
    build(matmul(127))(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_int32_matmul_is_exact():
    a = RNG.integers(-100, 100, (16, 16)).astype("int32")
    b = RNG.integers(-100, 100, (16, 16)).astype("int32")
    c = np.zeros((16, 16), "int32")
    build(matmul(16, "int32"))(a, b, c)
    np.testing.assert_array_equal(c, a @ b)


def test_conv2d_nchw_matches_numpy():
    x_buf = decl_buffer((1, 3, 8, 8), "float32", "X")
    w_buf = decl_buffer((4, 3, 3, 3), "float32", "W")
    y_buf = decl_buffer((1, 4, 6, 6), "float32", "Y")

    def body(n, k, h, w, c, r, s):
        return block(
            "conv",
            "SSSSRRR",
            (n, k, h, w, c, r, s),
            (1, 4, 6, 6, 3, 3, 3),
            lambda vn, vk, vh, vw, vc, vr, vs: store(
                y_buf,
                (vn, vk, vh, vw),
                y_buf[vn, vk, vh, vw] + x_buf[vn, vc, vh + vr, vw + vs] * w_buf[vk, vc, vr, vs],
            ),
            init=lambda vn, vk, vh, vw, *_: store(y_buf, (vn, vk, vh, vw), 0),
        )

    func = prim_func(
        "conv2d", (x_buf, w_buf, y_buf), root(loops((1, 4, 6, 6, 3, 3, 3), body, names="nkhwcrs"))
    )
    x, w = _floats(1, 3, 8, 8), _floats(4, 3, 3, 3)
    y = np.zeros((1, 4, 6, 6), "float32")
    build(func)(x, w, y)
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # n c h w r s
    expected = np.einsum("nchwrs,kcrs->nkhw", windows, w)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_softmax_with_intermediate_alloc_buffers_matches_numpy():
    a_buf, out = decl_buffer((4, 33), "float32", "A"), decl_buffer((4, 33), "float32", "out")
    row_max, row_sum = (
        decl_buffer((4,), "float32", "row_max"),
        decl_buffer((4,), "float32", "row_sum"),
    )
    max_nest = loops(
        (4, 33),
        lambda i, j: block(
            "max",
            "SR",
            (i, j),
            (4, 33),
            lambda r, c: store(row_max, (r,), B.max_value(row_max[r], a_buf[r, c])),
            init=lambda r, c: store(row_max, (r,), -math.inf),
        ),
    )
    sum_nest = loops(
        (4, 33),
        lambda i, j: block(
            "sum",
            "SR",
            (i, j),
            (4, 33),
            lambda r, c: store(
                row_sum, (r,), row_sum[r] + builtin.math_unary("exp", a_buf[r, c] - row_max[r])
            ),
            init=lambda r, c: store(row_sum, (r,), 0),
        ),
    )
    out_nest = loops(
        (4, 33),
        lambda i, j: block(
            "out",
            "SS",
            (i, j),
            (4, 33),
            lambda r, c: store(
                out, (r, c), builtin.math_unary("exp", a_buf[r, c] - row_max[r]) / row_sum[r]
            ),
        ),
    )
    func = prim_func(
        "softmax", (a_buf, out), root(seq(max_nest, sum_nest, out_nest), (row_max, row_sum))
    )
    a, result = _floats(4, 33) * 5, np.zeros((4, 33), "float32")
    build(func)(a, result)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(result, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_two_pass_layer_norm_with_heap_sized_intermediate_matches_numpy():
    rows, cols = 8, 200  # centred is 6400 bytes: over the 1024-byte stack limit, so malloc'd
    x_buf, y_buf = (
        decl_buffer((rows, cols), "float32", "X"),
        decl_buffer((rows, cols), "float32", "Y"),
    )
    mean, var = decl_buffer((rows,), "float32", "mean"), decl_buffer((rows,), "float32", "var")
    centred = decl_buffer((rows, cols), "float32", "centred")
    mean_nest = loops(
        (rows, cols),
        lambda i, j: block(
            "mean",
            "SR",
            (i, j),
            (rows, cols),
            lambda r, c: store(mean, (r,), mean[r] + x_buf[r, c] / float(cols)),
            init=lambda r, c: store(mean, (r,), 0),
        ),
    )
    centre_nest = loops(
        (rows, cols),
        lambda i, j: block(
            "centre",
            "SS",
            (i, j),
            (rows, cols),
            lambda r, c: store(centred, (r, c), x_buf[r, c] - mean[r]),
        ),
    )
    var_nest = loops(
        (rows, cols),
        lambda i, j: block(
            "var",
            "SR",
            (i, j),
            (rows, cols),
            lambda r, c: store(var, (r,), var[r] + centred[r, c] * centred[r, c] / float(cols)),
            init=lambda r, c: store(var, (r,), 0),
        ),
    )
    out_nest = loops(
        (rows, cols),
        lambda i, j: block(
            "norm",
            "SS",
            (i, j),
            (rows, cols),
            lambda r, c: store(
                y_buf, (r, c), centred[r, c] * builtin.math_unary("rsqrt", var[r] + 1e-5)
            ),
        ),
    )
    body = root(seq(mean_nest, centre_nest, var_nest, out_nest), (mean, var, centred))
    x, y = _floats(rows, cols), np.zeros((rows, cols), "float32")
    module = build(prim_func("layer_norm", (x_buf, y_buf), body))
    assert "tessel_workspace_alloc((size_t)" in module.source
    module(x, y)
    expected = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def test_a_parallel_loop_of_one_iteration_opens_no_parallel_region():
    """Waking the thread team for one iteration costs more than it saves (a single-tile
    kernel); the loop runs in the calling thread and still gives its result."""
    a_buf, out = decl_buffer((1, 16), "float32", "A"), decl_buffer((1, 16), "float32", "out")
    body = loops(
        (1, 16),
        lambda i, j: store(out, (i, j), a_buf[i, j] * B.const(2.0, "float32")),
        kind=ForKind.PARALLEL,
    )
    module = build(prim_func("double", (a_buf, out), body))
    assert "tessel_parallel_for(" not in module.source
    a, result = _floats(1, 16), np.zeros((1, 16), "float32")
    module(a, result)
    np.testing.assert_array_equal(result, a * 2)


def test_elementwise_chain_with_broadcast_and_parallel_loop_matches_numpy():
    a_buf, row, col = (
        decl_buffer((32, 16), "float32", "A"),
        decl_buffer((16,), "float32", "row"),
        decl_buffer((32,), "float32", "col"),
    )
    out = decl_buffer((32, 16), "float32", "out")
    body = loops(
        (32, 16),
        lambda i, j: store(
            out, (i, j), B.max_value(a_buf[i, j] * row[j] + col[i], B.const(0.0, "float32"))
        ),
        kind=ForKind.PARALLEL,
    )
    a, r, c, result = _floats(32, 16), _floats(16), _floats(32), np.zeros((32, 16), "float32")
    module = build(prim_func("chain", (a_buf, row, col, out), body))
    assert "tessel_parallel_for(" in module.source
    module(a, r, c, result)
    np.testing.assert_allclose(result, np.maximum(a * r + c[:, None], 0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_floor_division_and_modulo_match_numpy_on_negative_numbers(dtype):
    a_buf, b_buf = decl_buffer((64,), dtype, "a"), decl_buffer((64,), dtype, "b")
    quotient, remainder = decl_buffer((64,), dtype, "q"), decl_buffer((64,), dtype, "r")
    trunc_q, trunc_r = decl_buffer((64,), dtype, "tq"), decl_buffer((64,), dtype, "tr")
    body = loops(
        (64,),
        lambda i: seq(
            store(quotient, (i,), B.floordiv(a_buf[i], b_buf[i])),
            store(remainder, (i,), B.floormod(a_buf[i], b_buf[i])),
            store(trunc_q, (i,), B.truncdiv(a_buf[i], b_buf[i])),
            store(trunc_r, (i,), B.truncmod(a_buf[i], b_buf[i])),
        ),
    )
    func = prim_func("divmod", (a_buf, b_buf, quotient, remainder, trunc_q, trunc_r), body)
    a = RNG.integers(-100, 100, 64).astype(dtype)
    b = RNG.choice([-7, -3, -1, 1, 2, 5], 64).astype(dtype)
    outs = [np.zeros(64, dtype) for _ in range(4)]
    build(func)(a, b, *outs)
    np.testing.assert_array_equal(outs[0], a // b)
    np.testing.assert_array_equal(outs[1], a % b)
    np.testing.assert_array_equal(outs[2], np.trunc(a / b).astype(dtype))
    np.testing.assert_array_equal(outs[3], np.fmod(a, b))


def test_int8_arithmetic_wraps_like_numpy():
    a_buf, b_buf = decl_buffer((256,), "int8", "a"), decl_buffer((256,), "int8", "b")
    total, product = decl_buffer((256,), "int8", "total"), decl_buffer((256,), "int8", "product")
    body = loops(
        (256,),
        lambda i: seq(
            store(total, (i,), a_buf[i] + b_buf[i]),
            store(product, (i,), a_buf[i] * b_buf[i] - B.const(100, "int8")),
        ),
    )
    a = RNG.integers(-128, 128, 256).astype("int8")
    b = RNG.integers(-128, 128, 256).astype("int8")
    outs = [np.zeros(256, "int8"), np.zeros(256, "int8")]
    build(prim_func("wrap", (a_buf, b_buf, *[total, product]), body))(a, b, *outs)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(outs[0], a + b)
        np.testing.assert_array_equal(outs[1], a * b - np.int8(100))


def test_casts_match_numpy_conversions():
    x_buf, n_buf = decl_buffer((50,), "float32", "x"), decl_buffer((50,), "int64", "n")
    to_int, to_double = (
        decl_buffer((50,), "int32", "to_int"),
        decl_buffer((50,), "float64", "to_double"),
    )
    to_bool, narrowed = (
        decl_buffer((50,), "bool", "to_bool"),
        decl_buffer((50,), "int16", "narrowed"),
    )
    body = loops(
        (50,),
        lambda i: seq(
            store(to_int, (i,), B.cast(x_buf[i], "int32")),
            store(to_double, (i,), B.cast(n_buf[i], "float64") / 3.0),
            store(to_bool, (i,), B.cast(x_buf[i], "bool")),
            store(narrowed, (i,), B.cast(n_buf[i], "int16")),
        ),
    )
    x = (RNG.uniform(-50, 50, 50).astype("float32")).round(0) * RNG.choice([0, 1.5], 50).astype(
        "float32"
    )
    n = RNG.integers(-(2**40), 2**40, 50).astype("int64")
    outs = [np.zeros(50, d) for d in ("int32", "float64", "bool", "int16")]
    build(prim_func("casts", (x_buf, n_buf, to_int, to_double, to_bool, narrowed), body))(
        x, n, *outs
    )
    np.testing.assert_array_equal(outs[0], x.astype("int32"))
    np.testing.assert_array_equal(outs[1], n.astype("float64") / 3.0)
    np.testing.assert_array_equal(outs[2], x.astype("bool"))
    np.testing.assert_array_equal(outs[3], n.astype("int16"))


UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "fabs": np.abs,
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "rsqrt": lambda v: 1 / np.sqrt(v), "erf": np.vectorize(math.erf), "log1p": np.log1p,
}  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_math_intrinsics_match_numpy(dtype):
    x_buf = decl_buffer((40,), dtype, "x")
    outs = {name: decl_buffer((40,), dtype, f"out_{name}") for name in UNARY}
    power = decl_buffer((40,), dtype, "power")
    body = loops(
        (40,),
        lambda i: seq(
            *(store(buf, (i,), builtin.math_unary(name, x_buf[i])) for name, buf in outs.items()),
            store(power, (i,), builtin.math_binary("pow", x_buf[i], B.const(1.5, dtype))),
        ),
    )
    func = prim_func("math", (x_buf, *outs.values(), power), body)
    x = RNG.uniform(0.01, 4, 40).astype(dtype)
    x[:4] = [0.5, 1.5, 2.5, 3.5]  # halfway cases: NumPy rounds them to even
    results = [np.zeros(40, dtype) for _ in range(len(outs) + 1)]
    build(func)(x, *results)
    tolerance = 2e-6 if dtype == "float32" else 1e-12
    for (name, reference), got in zip(UNARY.items(), results, strict=False):
        want = np.asarray(reference(x)).astype(dtype)
        np.testing.assert_allclose(got, want, rtol=tolerance, err_msg=name)
    np.testing.assert_allclose(results[-1], x**1.5, rtol=tolerance)
