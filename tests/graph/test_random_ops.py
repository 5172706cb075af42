"""The random operators compiled to C against their NumPy references (the same Philox draws:
integer results exactly, float ones within rounding), their statistics, and the random state: each
call draws afresh, a seeded model repeats its sequence from load, `seed_random` and an explicit
state reproduce a run, and nothing folds a draw away."""

import numpy as np
import pytest

from tessel import graph
from tessel.frontend.onnx.relay import call, const
from tessel.graph.evaluate import evaluate
from tessel.graph.expr import Function, Tuple, Var
from tessel.graph.op import OpTypeError, get_op
from tessel.graph.op.random import RANDOM_STATE, STATE_TYPE
from tessel.graph.passes.fold_constant import FoldConstant
from tessel.ir.module import IRModule


def _module(body_of, *inputs: Var) -> tuple[IRModule, Var]:
    state = Var(RANDOM_STATE, STATE_TYPE)
    return IRModule.from_func(Function((*inputs, state), body_of(state)), "main"), state


def _state(nonce: int, call_number: int) -> np.ndarray:
    return np.array([nonce, call_number], np.uint64)


DRAWS = {
    "uniform": lambda s: call("random.uniform", s, shape=(3, 50), dtype="float64", low=-2.0,
                              high=3.0, stream=1),
    "uniform-f32-seeded": lambda s: call("random.uniform", s, shape=(7,), dtype="float32",
                                         seed=5.0, stream=2),
    "normal": lambda s: call("random.normal", s, shape=(100,), dtype="float32", mean=1.0,
                             scale=0.5, stream=3),
    "bernoulli": lambda s: call("random.bernoulli", s, const(np.linspace(0, 1, 40)),
                                dtype="int32", stream=4),
    "multinomial": lambda s: call("random.multinomial", s,
                                  const(np.log(np.array([[1, 2, 7], [5, 5, 0.001]], "float32"))),
                                  sample_size=30, dtype="int64", stream=5),
}  # fmt: skip


@pytest.mark.parametrize("name", list(DRAWS))
def test_compiled_draws_match_the_reference(name):
    mod, _ = _module(DRAWS[name])
    model = graph.compile(mod)
    for call_number in (0, 1, 7):
        state = _state(123456789, call_number)
        got = model(tessel_random_state=state)
        want = evaluate(mod, state)
        assert got.shape == want.shape and got.dtype == want.dtype
        if got.dtype.kind in "iub":
            np.testing.assert_array_equal(got, want)
        else:  # the same uniform bits; C may fuse `low + (high - low) * u` into one fma
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_draws_have_their_distributions():
    mod, _ = _module(
        lambda s: Tuple(
            (
                call("random.uniform", s, shape=(100_000,), low=2.0, high=4.0, stream=0),
                call("random.normal", s, shape=(100_000,), mean=-1.0, scale=3.0, stream=1),
                call("random.bernoulli", s, const(np.full(100_000, 0.3, "float32")), stream=2),
                call(
                    "random.multinomial",
                    s,
                    const(np.log(np.array([[0.2, 0.3, 0.5]], "f4"))),
                    sample_size=100_000,
                    stream=3,
                ),
            )
        )
    )
    uniform, normal, coin, classes = graph.compile(mod)()
    assert 2 <= uniform.min() and uniform.max() < 4 and abs(uniform.mean() - 3) < 0.01
    assert abs(normal.mean() + 1) < 0.05 and abs(normal.std() - 3) < 0.05
    assert abs(coin.mean() - 0.3) < 0.01
    frequencies = np.bincount(classes[0], minlength=3) / classes.size
    np.testing.assert_allclose(frequencies, [0.2, 0.3, 0.5], atol=0.01)


def test_each_call_draws_afresh_and_a_seeded_model_repeats_from_load():
    mod, _ = _module(lambda s: call("random.normal", s, shape=(8,), seed=3.0, stream=0))
    first, second = graph.compile(mod), graph.compile(mod)
    a1, a2 = first(), first()
    assert not np.array_equal(a1, a2)
    np.testing.assert_array_equal(second(), a1)
    np.testing.assert_array_equal(second(), a2)


def test_unseeded_models_differ_until_seeded_the_same():
    mod, _ = _module(lambda s: call("random.uniform", s, shape=(16,), stream=0))
    one, two = graph.compile(mod), graph.compile(mod)
    assert not np.array_equal(one(), two())
    one.seed_random(42)
    two.seed_random(42)
    np.testing.assert_array_equal(one(), two())
    np.testing.assert_array_equal(one(), two())


def test_streams_of_one_model_differ():
    mod, _ = _module(
        lambda s: Tuple(tuple(call("random.uniform", s, shape=(32,), stream=k) for k in range(2)))
    )
    a, b = graph.compile(mod)()
    assert not np.array_equal(a, b)


def test_fold_constant_keeps_a_draw_of_constants():
    mod, _ = _module(
        lambda s: call("random.bernoulli", s, const(np.full(4, 0.5, "float32")), stream=0)
    )
    folded = FoldConstant()(mod)
    assert folded["main"].body.op.name == "random.bernoulli"


def test_a_bad_state_or_dtype_is_refused():
    op = get_op("random.uniform")
    with pytest.raises(OpTypeError, match="argument `state` must be the random state"):
        op.infer_type((STATE_TYPE.__class__((3,), "uint64"),), {"shape": (2,)})
    with pytest.raises(OpTypeError, match="attribute `dtype`"):
        op.infer_type((STATE_TYPE,), {"shape": (2,), "dtype": "int32"})
