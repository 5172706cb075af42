"""The default schedule's conv rule (tessel.schedule.rules.conv): conv2d (strides, padding,
dilation, odd channel counts and sizes, with its relu epilogue), depthwise conv2d (groups) and
TOPI's depthwise_conv2d_nchw compile to vectorized kernels that give the reference results."""

import numpy as np
import pytest
from rules_testing import compile_and_check, model, rand

import tessel
from tessel import te, topi
from tessel.schedule.rules import default_schedule


def _conv(ci: int, co: int, size: int, kernel: int, stride: int, pad: int, dilation: int,
          groups: int = 1) -> str:  # fmt: skip
    return (
        f"  %0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, "
        f"{pad}], dilation=[{dilation}, {dilation}], groups={groups}, channels={co}, "
        f"kernel_size=[{kernel}, {kernel}]);\n  nn.relu(%0)"
    )


CONV2D = [
    # (batch, in channels, out channels, size, kernel, stride, padding, dilation)
    (1, 3, 17, 13, 3, 1, 1, 1),
    (1, 7, 16, 13, 3, 2, 1, 1),
    (2, 17, 7, 7, 3, 1, 2, 2),
    (1, 16, 33, 7, 1, 1, 0, 1),
    (1, 3, 8, 13, 7, 2, 3, 1),
    (1, 3, 24, 13, 3, 2, 1, 1),
    (1, 17, 32, 16, 1, 2, 0, 1),
    (2, 7, 3, 13, 5, 1, 0, 1),
]


@pytest.mark.parametrize(("n", "ci", "co", "size", "k", "s", "p", "d"), CONV2D)
def test_conv2d_relu(n, ci, co, size, k, s, p, d):
    mod = model(
        _conv(ci, co, size, k, s, p, d),
        f"%x: Tensor[({n}, {ci}, {size}, {size}), float32], "
        f"%w: Tensor[({co}, {ci}, {k}, {k}), float32]",
    )
    tir = compile_and_check(mod, {"x": rand(n, ci, size, size)}, {"w": rand(co, ci, k, k, seed=1)})
    width = (size + 2 * p - d * (k - 1) - 1) // s + 1
    columns = next(t for t in (8, 7, 6, 5, 4, 3, 2, 1) if width % t == 0)
    assert f"T.unroll({columns})" in tir  # x_i: the largest tile that leaves no tail
    tile = next(t for t in (16, 8, 4, 2) if co % t == 0) if co % 2 == 0 else 1
    assert tile == 1 or f"T.vectorized({tile})" in tir  # f_i, the same
    assert "conv2d_nchw_init" in tir  # decompose_reduction
    assert 'scope="local"' in tir  # the accumulators
    assert "T.max(conv2d_nchw_local" in tir  # the relu, inlined into the write-back
    if p:  # the padding stays its own nest, so the conv's loads need no bounds check
        assert 'T.block("pad_temp")' in tir


def _column_vector(width):
    """The columns are vectorized by the largest of 8, 4, 2 dividing the output width (no
    masked tail); an odd width is not vectorized."""
    tile = next((t for t in (8, 4, 2) if width % t == 0), 1)
    return f"T.vectorized({tile})" if tile > 1 else "conv2d_nchw"


DEPTHWISE = [(7, 13, 3, 1, 1), (17, 7, 3, 2, 1), (3, 13, 5, 1, 2), (16, 16, 3, 2, 1)]


@pytest.mark.parametrize(("c", "size", "k", "s", "p"), DEPTHWISE)
def test_depthwise_relu(c, size, k, s, p):
    mod = model(
        _conv(c, c, size, k, s, p, 1, groups=c),
        f"%x: Tensor[(1, {c}, {size}, {size}), float32], %w: Tensor[({c}, 1, {k}, {k}), float32]",
    )
    tir = compile_and_check(mod, {"x": rand(1, c, size, size)}, {"w": rand(c, 1, k, k, seed=1)})
    assert "group_conv2d_nchw_init" in tir  # groups=c: the grouped tile, with c of extent 1
    assert _column_vector((size + 2 * p - k) // s + 1) in tir


@pytest.mark.parametrize(("c", "m", "size", "k", "s", "p"), [(7, 1, 13, 3, 1, 1),
                                                             (17, 2, 7, 3, 2, 1)])  # fmt: skip
def test_topi_depthwise(c, m, size, k, s, p):
    """topi.nn.depthwise_conv2d_nchw (the graph lowers groups through group_conv2d_nchw, which
    the conv2d tile covers): reductions outside x, x vectorized, same results as unscheduled."""
    data = te.placeholder((1, c, size, size), name="data")
    kernel = te.placeholder((c, m, k, k), name="kernel")
    out = topi.nn.depthwise_conv2d_nchw(data, kernel, s, p, 1)
    func = te.create_prim_func([data, kernel, out])
    scheduled = default_schedule(func).func
    tir = scheduled.script()
    assert "DepthwiseConv2d_init" in tir
    assert 'T.block("PaddedInput")' in tir  # kept, not inlined
    assert f"T.vectorized({(size + 2 * p - k) // s + 1})" in tir
    x, w = rand(1, c, size, size), rand(c, m, k, k, seed=1)
    expected, got = np.zeros(out.shape, "float32"), np.zeros(out.shape, "float32")
    tessel.build(func)(x, w, expected)
    tessel.build(scheduled)(x, w, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
