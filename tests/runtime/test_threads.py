"""Thread counts: `graph.compile(..., threads=N)` and `CompiledModel.threads` run the kernels on
N threads with the same results; bad counts are refused."""

import numpy as np
import pytest

from tessel import graph
from tessel.runtime.threads import current_threads, default_threads, set_threads
from tessel.support.errors import UserError

MLP = """
def @main(%x: Tensor[(64, 32), float32], %w: Tensor[(48, 32), float32]) {
  nn.relu(nn.dense(%x, %w))
}"""


def test_set_threads_sets_the_team_of_the_next_kernels():
    before = current_threads()
    try:
        set_threads(1)
        assert current_threads() == 1
        set_threads(3)
        assert current_threads() == 3
    finally:
        set_threads(before)


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "2"])
def test_set_threads_refuses_what_is_no_thread_count(count):
    with pytest.raises(ValueError, match="positive integer"):
        set_threads(count)


def test_default_threads_is_the_cores_this_process_may_use():
    import os

    assert default_threads() == len(os.sched_getaffinity(0))


def test_a_model_gives_the_same_results_at_each_thread_count():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype("float32")
    w = rng.standard_normal((48, 32)).astype("float32")
    before = current_threads()
    model = graph.compile(graph.parse(MLP), {"w": w}, threads=1)
    assert model.threads == 1
    one = model(x)
    assert current_threads() == before  # the call's team was its own: restored after it
    model.threads = 2
    np.testing.assert_array_equal(model(x), one)
    model.threads = None  # OpenMP's setting, as the caller left it
    np.testing.assert_array_equal(model(x), one)
    assert current_threads() == before
    np.testing.assert_allclose(one, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("count", [0, 2.0, False])
def test_a_bad_thread_count_is_refused(count):
    model = graph.compile(graph.parse(MLP), {"w": np.zeros((48, 32), "float32")})
    with pytest.raises(UserError, match="threads must be a positive integer"):
        model.threads = count
    with pytest.raises(UserError, match="threads must be a positive integer"):
        graph.compile(graph.parse(MLP), threads=count)
