"""TOPI operators over symbolic extents (a batch or a sequence length known at run time), each
built once and run in C at several sizes against NumPy: conv2d on a symbolic batch,
concatenate, broadcast_to, split, squeeze, take, gather and gather_nd with symbolic axes."""

from __future__ import annotations

import numpy as np
import pytest

from tessel import te, topi
from tessel.arith.dims import evaluate_dim, symbol
from tessel.driver import build
from tessel.topi.utils import OperatorError

N, S = symbol("n", 1, 64), symbol("s", 1, 512)
SIZES = [(1, 1), (2, 3), (5, 17)]


def _shape(shape, n, s):
    return tuple(evaluate_dim(d, {N: n, S: s}) for d in shape)


def _check(placeholders, output, reference, integer_inputs=None):
    """Build once; at each size, random inputs (or `integer_inputs(shape, n, s)`), NumPy's
    reference of them, and ours."""
    library = build(te.create_prim_func([*placeholders, output]))
    rng = np.random.default_rng(0)
    for n, s in SIZES:
        arrays = []
        for k, p in enumerate(placeholders):
            shape = _shape(p.shape, n, s)
            if integer_inputs is not None and k in integer_inputs:
                arrays.append(integer_inputs[k](shape, n, s, rng))
            else:
                arrays.append(rng.standard_normal(shape).astype(p.dtype))
        expected = reference(*arrays)
        got = np.zeros(_shape(output.shape, n, s), output.dtype)
        library(*arrays, got)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_over_a_symbolic_batch():
    data = te.placeholder((N, 3, 6, 6), name="data")
    kernel = te.placeholder((4, 3, 3, 3), name="kernel")
    out = topi.nn.conv2d_nchw(data, kernel, 1, 1, 1)

    def reference(x, w):
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
        return np.einsum("nchwij,kcij->nkhw", windows, w)

    _check([data, kernel], out, reference)


def test_conv2d_needs_constant_extents_past_the_batch():
    data = te.placeholder((1, 3, S, 6), name="data")
    kernel = te.placeholder((4, 3, 3, 3), name="kernel")
    with pytest.raises(OperatorError, match=r"constant extents past the batch axis"):
        topi.nn.conv2d_nchw(data, kernel, 1, 1, 1)


def test_concatenate_along_and_beside_symbolic_axes():
    a, b = te.placeholder((N, S, 2), name="a"), te.placeholder((N, S, 3), name="b")
    _check([a, b], topi.concatenate([a, b], axis=2), lambda x, y: np.concatenate([x, y], 2))
    c, d = te.placeholder((N, 2), name="c"), te.placeholder((S, 2), name="d")
    _check([c, d], topi.concatenate([c, d], axis=0), lambda x, y: np.concatenate([x, y], 0))


def test_broadcast_to_a_symbolic_shape():
    a = te.placeholder((1, S, 1), name="a")
    library = build(te.create_prim_func([a, topi.broadcast_to(a, (N, S, 4))]))
    rng = np.random.default_rng(1)
    for n, s in SIZES:
        x = rng.standard_normal((1, s, 1)).astype("float32")
        got = np.zeros((n, s, 4), "float32")
        library(x, got)
        np.testing.assert_array_equal(got, np.broadcast_to(x, (n, s, 4)))
    with pytest.raises(OperatorError, match=r"cannot broadcast"):
        topi.broadcast_to(te.placeholder((N, 2), name="b"), (S, 2))  # n is not proved to be s


def test_split_beside_symbolic_axes():
    a = te.placeholder((N, S, 6), name="a")
    parts = topi.split(a, 3, axis=2)
    for k, part in enumerate(parts):
        _check([a], part, lambda x, k=k: np.split(x, 3, axis=2)[k])


def test_squeeze_keeps_a_symbolic_axis():
    a = te.placeholder((N, 1, S), name="a")
    out = topi.squeeze(a)
    assert len(out.shape) == 2
    _check([a], out, lambda x: x.squeeze(1))


def _indices(high):
    return lambda shape, n, s, rng: rng.integers(-high(n, s), high(n, s), shape).astype("int64")


def test_take_from_and_with_symbolic_extents():
    table = te.placeholder((N * S, 4), name="table")
    ids = te.placeholder((N, S), name="ids", dtype="int64")
    out = topi.take(table, ids, axis=0)
    _check(
        [table, ids],
        out,
        lambda t, i: np.take(t, i, axis=0),
        integer_inputs={1: _indices(lambda n, s: n * s)},
    )


def test_gather_and_gather_nd_with_symbolic_extents():
    data = te.placeholder((N, S), name="data")
    index = te.placeholder((N, S), name="index", dtype="int64")
    _check(
        [data, index],
        topi.gather(data, 1, index),
        lambda d, i: np.take_along_axis(d, np.where(i < 0, i + d.shape[1], i), axis=1),
        integer_inputs={1: _indices(lambda n, s: s)},
    )
    points = te.placeholder((1, N), name="points", dtype="int64")
    _check(
        [data, points],
        topi.gather_nd(data, points),
        lambda d, p: d[p[0]],
        integer_inputs={1: lambda shape, n, s, rng: rng.integers(0, n, shape).astype("int64")},
    )
