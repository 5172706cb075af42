"""SymbolicModel's Python loop (executor="python") and its buffers: kernel results live in a
pool that a call reuses once a result's last reader has run and that the next call at the same
sizes reuses whole; the results handed to the caller are never pooled; concurrent calls do not
share buffers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tessel.graph import parse
from tessel.graph.evaluate import evaluate
from tessel.graph.executor import compile as graph_compile
from tessel.graph.symbolic_executor import BufferPool

# A chain of kernels whose results die one after another: reuse within a call is possible.
CHAIN_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq, 8), float32], %w: Tensor[(8, 8), float32]) {
  %0 = reshape(%x, newshape=[-1, 8]);
  %1 = nn.dense(%0, %w);
  %2 = tanh(%1);
  %3 = nn.dense(%2, %w);
  %4 = sigmoid(%3);
  %5 = nn.dense(%4, %w);
  %6 = reshape(%5, newshape=[batch, seq, 8]);
  %7 = add(%6, %x);
  sum(%7, axis=[1])
}
"""


@pytest.fixture(scope="module")
def chain():
    mod = parse(CHAIN_TEXT)
    model = graph_compile(mod, jobs=1, threads=1, executor="python")
    assert model.executor == "python"
    weight = np.random.default_rng(1).standard_normal((8, 8)).astype("float32") / 3
    return mod, model, weight


def _input(batch, seq, seed=0):
    return np.random.default_rng(seed).standard_normal((batch, seq, 8)).astype("float32")


def test_a_second_call_at_the_same_sizes_reuses_the_pool_and_stays_right(chain):
    mod, model, weight = chain
    x = _input(3, 17)
    first = model(x, weight)
    held = model.pooled_bytes
    # Results die as the chain goes: the pool holds less than every result of a call.
    all_results = 3 * 17 * 8 * 4 * 6
    assert 0 < held < all_results
    second = model(x, weight)
    assert model.pooled_bytes == held
    np.testing.assert_allclose(second, evaluate(mod, x, weight), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(first, second)


def test_results_returned_are_not_overwritten_by_later_calls(chain):
    mod, model, weight = chain
    xs = [_input(b, s, seed) for seed, (b, s) in enumerate([(2, 5), (2, 5), (4, 3), (1, 1)])]
    results = [model(x, weight) for x in xs]
    for x, result in zip(xs, results, strict=True):
        np.testing.assert_allclose(result, evaluate(mod, x, weight), rtol=1e-4, atol=1e-5)


def test_the_pool_keeps_only_the_working_set_of_the_last_call(chain):
    _, model, weight = chain
    model(_input(8, 40), weight)
    large = model.pooled_bytes
    model(_input(1, 2), weight)
    assert model.pooled_bytes <= large  # the buffers that fit were reused; none was added
    model(_input(8, 40), weight)
    assert model.pooled_bytes == large


def test_concurrent_calls_at_different_sizes_each_get_their_own_buffers(chain):
    mod, model, weight = chain
    sizes = [(2, 5), (3, 9), (1, 30), (4, 4)]

    def run(batch, seq, seed):
        for round_ in range(5):
            x = _input(batch, seq, seed + round_)
            np.testing.assert_allclose(
                model(x, weight), evaluate(mod, x, weight), rtol=1e-4, atol=1e-5
            )

    with ThreadPoolExecutor(len(sizes)) as pool:  # a failure in a thread raises here
        list(pool.map(run, *zip(*[(b, s, k * 10) for k, (b, s) in enumerate(sizes)], strict=True)))


def test_buffer_pool_reuses_the_smallest_free_buffer_that_fits_aligned():
    pool = BufferPool()
    small, small_buffer = pool.take((4, 4), np.dtype("float32"))
    large, large_buffer = pool.take((100,), np.dtype("float64"))
    assert small.shape == (4, 4) and large.dtype == np.float64
    assert small.ctypes.data % BufferPool.ALIGNMENT == 0
    assert large.ctypes.data % BufferPool.ALIGNMENT == 0
    pool.give(large_buffer)
    pool.give(small_buffer)
    again, buffer = pool.take((3,), np.dtype("int32"))
    assert buffer is small_buffer  # the smallest that fits, not the first freed
    pool.give(buffer)
    pool.take((2,), np.dtype("int8"))  # the small buffer again: taken twice this call
    pool.end_call()
    assert len(pool.buffers()) == 2  # each buffer taken this call, once
    empty, _ = pool.take((0, 3), np.dtype("float32"))
    assert empty.shape == (0, 3)
