"""The C main of a model compiled once for symbolic shapes (tessel/graph/symbolic_main.py): its
memory plan shares slots of sizes proved equal by liveness, its arena is sized at each call,
and the model it runs matches the reference evaluator at every size; a main it cannot express
keeps the Python loop."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tessel.arith.dims import dims_equal, evaluate_dim, symbol
from tessel.graph import TensorType, parse
from tessel.graph.evaluate import evaluate
from tessel.graph.executor import compile as graph_compile
from tessel.graph.symbolic_main import KernelCall, Value, plan_symbolic_memory

N = symbol("n", 1, 64)


def _call(position_args, *shapes):
    return KernelCall(
        "k", tuple(position_args), tuple(TensorType(s, "float32") for s in shapes), ()
    )


def test_plan_shares_a_dead_slot_of_a_size_proved_equal():
    rows = (N * 3, 8)
    calls = [
        _call([Value("input", 0)], rows),  # 0
        _call([Value("result", 0)], rows),  # 1: 0 dies after this call
        _call([Value("result", 1)], rows),  # 2: takes 0's slot
        _call([Value("result", 2)], (N, 5)),  # 3: another size, a slot of its own
        _call([Value("result", 3)], rows),  # 4: 1's slot (1 died at 2)
    ]
    plan = plan_symbolic_memory(calls, returned={(4, 0)})
    assert plan.slots == 3
    assert plan.offsets[(0, 0)] is plan.offsets[(2, 0)]
    assert plan.offsets[(1, 0)] is not plan.offsets[(0, 0)]
    assert (4, 0) not in plan.offsets  # returned: written into main's output
    sizes = {N: 5}
    row_bytes = -(-15 * 8 * 4 // 64) * 64
    assert evaluate_dim(plan.nbytes, sizes) == 2 * row_bytes + (-(-5 * 5 * 4 // 64) * 64)
    for key, offset in plan.offsets.items():
        assert evaluate_dim(offset, sizes) % 64 == 0, key


def test_plan_keeps_results_alive_until_their_last_reader():
    calls = [
        _call([Value("input", 0)], (N, 4)),  # 0, read by 2
        _call([Value("input", 0)], (N, 4)),  # 1
        _call([Value("result", 0), Value("result", 1)], (N, 4)),  # 2: neither may be reused
    ]
    plan = plan_symbolic_memory(calls, returned={(2, 0)})
    assert plan.slots == 2
    assert not dims_equal(plan.offsets[(0, 0)], plan.offsets[(1, 0)])


BLOCK_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(batch, seq, 8), float32], %w: Tensor[(8, 8), float32],
          %g: Tensor[(8,), float32], %b: Tensor[(8,), float32]) {
  %0 = reshape(%x, newshape=[-1, 8]);
  %1 = nn.dense(%0, %w);
  %2 = reshape(%1, newshape=[batch, seq, 8]);
  %3 = nn.softmax(%2, axis=-1);
  %4 = add(%3, %x);
  %5 = nn.layer_norm(%4, %g, %b, axis=-1);
  (sum(%5, axis=[1]), %4)
}
"""


@pytest.fixture(scope="module")
def block():
    mod = parse(BLOCK_TEXT)
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype("float32") for s in ((8, 8), (8,), (8,))]
    params = dict(zip(("w", "g", "b"), weights, strict=True))
    return mod, weights, graph_compile(mod, params, jobs=1, threads=1)


def test_the_c_main_runs_a_model_with_two_results_at_every_size(block):
    mod, weights, model = block
    assert model.executor == "aot"
    rng = np.random.default_rng(1)
    for batch, seq in [(1, 1), (2, 5), (3, 17), (2, 5)]:
        x = rng.standard_normal((batch, seq, 8)).astype("float32")
        got = model(x)
        expected = evaluate(mod, x, *weights)
        assert len(got) == 2
        for ours, theirs in zip(got, expected, strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_the_c_main_refuses_a_size_outside_the_bounds_or_a_wrong_axis(block):
    _, _, model = block
    with pytest.raises(ValueError, match=r"input `x`: axis 2 must be 8"):
        model(np.zeros((1, 2, 7), "float32"))


def test_concurrent_calls_of_the_c_main_each_size_their_own_arena(block):
    mod, weights, model = block
    sizes = [(1, 3), (4, 9), (2, 30)]

    def run(batch, seq):
        for seed in range(4):
            x = np.random.default_rng(seed).standard_normal((batch, seq, 8)).astype("float32")
            np.testing.assert_allclose(
                model(x)[0], evaluate(mod, x, *weights)[0], rtol=1e-4, atol=1e-5
            )

    with ThreadPoolExecutor(len(sizes)) as pool:  # a failure in a thread raises here
        list(pool.map(run, *zip(*sizes, strict=True)))


def test_a_main_returning_an_input_keeps_the_python_loop():
    mod = parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(n, 4), float32]) {
  (tanh(%x), %x)
}
"""
    )
    model = graph_compile(mod, jobs=1, threads=1)
    assert model.executor == "python"
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    got = model(x)
    np.testing.assert_allclose(got[0], np.tanh(x), rtol=1e-6)
    np.testing.assert_array_equal(got[1], x)


def test_a_kernel_of_the_c_main_still_checks_extents_when_called_alone(block):
    _, _, model = block
    # The reshape of (batch * seq, 8) rows back to (batch, seq, 8): main calls its internal
    # function with pointers; its entry, called alone, checks the rows against batch * seq.
    name = next(
        n
        for n in model.library.names()
        if [p.shape for p in model.library[n].signature.params][:2]
        == [("p0_dim0", 8), ("batch", "seq", 8)]
    )
    kernel = model.library[name]
    out = np.zeros((2, 3, 8), "float32")
    kernel(np.ones((6, 8), "float32"), out, 2, 3)
    np.testing.assert_array_equal(out, np.ones((2, 3, 8)))
    with pytest.raises(Exception, match=r"axis 0 of `p0` must be"):
        kernel(np.zeros((5, 8), "float32"), out, 2, 3)
