"""The default schedule of kernels whose extents are symbolic (an int64 shape symbol, as a graph
with a dynamic batch or sequence lowers): each scheduled kernel, compiled to C, computes what
the unscheduled one computes, at several sizes of the symbol (1, a size below every tile, one
above), so one compiled kernel serves every size."""

import numpy as np
import pytest

from tessel import driver, te, topi
from tessel.arith.dims import evaluate_dim, normalize_dim, symbol
from tessel.graph.primitive import size_params
from tessel.ir.module import IRModule
from tessel.schedule.rules import schedule_with_plans

N = symbol("n")
S = symbol("s")  # a second symbol: rows of batch * seq, as a model's reshaped activations


def _ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


KERNELS = {
    "dense_relu": (
        lambda: [_ph((N, 64), "A"), _ph((32, 64), "W")],
        lambda a, w: topi.nn.relu(topi.nn.dense(a, w)),
    ),
    "dense_rows_of_two_symbols": (
        lambda: [_ph((N * S, 64), "A"), _ph((48, 64), "W")],
        lambda a, w: topi.nn.dense(a, w),
    ),
    "dense_bias_3d": (
        lambda: [_ph((N, 7, 64), "A"), _ph((48, 64), "W"), _ph((48,), "B")],
        lambda a, w, b: topi.add(
            topi.reshape(topi.nn.dense(topi.reshape(a, (N * 7, 64)), w), (N, 7, 48)), b
        ),
    ),
    "batch_matmul": (
        lambda: [_ph((N, 12, 32), "A"), _ph((N, 20, 32), "B")],
        lambda a, b: topi.nn.batch_matmul(a, b),
    ),
    "softmax_square": (lambda: [_ph((N, 3, N), "X")], lambda x: topi.nn.softmax(x, -1)),
    "layer_norm": (
        lambda: [_ph((N, 7, 32), "A"), _ph((32,), "G"), _ph((32,), "B")],
        lambda a, g, b: topi.nn.layer_norm(a, g, b, axis=[-1]),
    ),
    "gelu": (
        lambda: [_ph((N, 37), "A")],
        lambda a: topi.multiply(a, topi.add(topi.erf(topi.multiply(a, 0.7)), 1.0)),
    ),
    "sum": (lambda: [_ph((N, 7, 16), "A")], lambda a: topi.sum(a, axis=1)),
    "mean_keepdims": (lambda: [_ph((N, 7, 16), "A")], lambda a: topi.mean(a, 2, True)),
    "split_heads": (
        lambda: [_ph((N, 7, 16), "A")],
        lambda a: topi.transpose(topi.reshape(a, (N, 7, 4, 4)), (0, 2, 1, 3)),
    ),
    "take_rows": (
        lambda: [_ph((50, 16), "E"), _ph((N, 7), "I", "int64")],
        lambda e, i: topi.take(e, i, axis=0),
    ),
    "slice_to_symbol": (
        lambda: [_ph((N, 40), "X")],
        lambda x: topi.strided_slice(x, [0, 3], [N, 40], [1, 2], None),
    ),
}


def _concrete(shape, size):
    return tuple(evaluate_dim(normalize_dim(d), {N: size, S: size + 2}) for d in shape)


def _unbound_symbols(placeholders, out):
    """The symbols no buffer has as a whole extent: the kernel takes them as scalars."""
    shapes = [tuple(normalize_dim(d) for d in t.shape) for t in [*placeholders, out]]
    return size_params(shapes)


def _arguments(placeholders, size, rng):
    arrays = []
    for p in placeholders:
        shape = _concrete(p.shape, size)
        if p.dtype.startswith("int"):
            arrays.append(rng.integers(0, 50, shape).astype(p.dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(p.dtype))
    return arrays


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_scheduled_symbolic_kernel_matches_the_unscheduled_one_at_every_size(name):
    make, compute = KERNELS[name]
    placeholders = make()
    out = compute(*placeholders)
    scalars = _unbound_symbols(placeholders, out)
    func = te.create_prim_func([*placeholders, out, *scalars])
    report = schedule_with_plans(func)
    assert report.applied, "no rule scheduled the kernel"
    scheduled = report.schedule.func
    library = driver.build(IRModule.from_dict({"main": scheduled}), target="c")
    reference = driver.build(IRModule.from_dict({"main": func}), target="c")
    rng = np.random.default_rng(0)
    for size in (1, 3, 17):
        args = _arguments(placeholders, size, rng)
        got = np.zeros(_concrete(out.shape, size), out.dtype)
        want = np.zeros_like(got)
        sizes = [{N: size, S: size + 2}[v] for v in scalars]
        library["main"](*args, got, *sizes)
        reference["main"](*args, want, *sizes)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
