"""The cost model of CombineParallelDense: its candidates compute the same products, its
measurements are kept on disk and read back, and its choice rule."""

import numpy as np
import pytest

from tessel.graph import evaluate, parse
from tessel.graph.executor import bind_params
from tessel.graph.passes import CombineParallelDense, combine_cost
from tessel.graph.passes.combine_cost import (
    MEASURE,
    Signature,
    candidate,
    candidate_inputs,
    choose,
    measured_times,
    settled,
)
from tessel.ir.target import Target
from tessel.ir.transform import PassContext
from tessel.runtime import compiler as compiler_module
from tessel.support.errors import UserError
from tessel.testing.compiler_runs import record_compiler_runs

SMALL = Signature("nn.dense", (4, 16), (8, 8, 8), "float32", "float32", True, "")


@pytest.mark.parametrize(
    "sig",
    [
        SMALL,
        Signature("nn.matmul", (4, 16), (8, 4, 8), "float32", "float32", False, ""),
        Signature("nn.matmul", (4, 16), (8, 8, 8), "float32", "float32", True, ""),
        Signature("nn.dense", (4, 16), (8, 8, 8), "float32", "float32", True, "", False),
    ],
    ids=["dense", "matmul", "matmul-transposed", "weights-as-inputs"],
)
def test_candidates_compute_the_same_products(sig):
    inputs = candidate_inputs(sig)
    separate = evaluate(candidate(sig, "separate"), *inputs)
    concat = evaluate(candidate(sig, "concat"), *inputs)
    np.testing.assert_allclose(concat, np.concatenate(separate, axis=-1), rtol=1e-5, atol=1e-5)
    if sig.batchable:
        batch = evaluate(candidate(sig, "batch"), *inputs)
        np.testing.assert_allclose(batch, np.stack(separate), rtol=1e-5, atol=1e-5)


def test_measurements_are_stored_and_read_back(tmp_path, monkeypatch):
    calls = []
    real = combine_cost.measure
    monkeypatch.setattr(combine_cost, "measure", lambda *a: calls.append(a) or real(*a))
    first = measured_times(SMALL, None, tmp_path)
    assert len(calls) == 1
    assert list(tmp_path.rglob("*")), "nothing was stored"
    for seconds in first.values():
        assert sorted(seconds) == ["batch", "concat", "separate"]
        assert all(s > 0 for s in seconds.values())
    assert 1 in first
    assert measured_times(SMALL, None, tmp_path) == first
    assert len(calls) == 1, "the stored medians were measured again"


def test_a_damaged_entry_is_measured_again(tmp_path, monkeypatch):
    unequal = Signature("nn.dense", (4, 16), (8, 4, 8), "float32", "float32", True, "")
    measured_times(unequal, None, tmp_path)
    for damage in ("{not json", '{"seconds": {"1": {}}}', '{"seconds": {"1": {"concat": 1}}}'):
        for path in tmp_path.rglob("*"):
            if path.is_file():
                path.write_text(damage)
        again = measured_times(unequal, None, tmp_path)
        assert sorted(again[1]) == ["concat", "separate"]  # unequal widths: no batch candidate


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ({1: {"separate": 1.0, "concat": 0.5, "batch": 0.7}}, "concat"),
        ({1: {"separate": 1.0, "concat": 0.99, "batch": 0.985}}, "separate"),  # within the margin
        (
            {
                1: {"separate": 1.0, "concat": 0.9, "batch": 0.6},
                2: {"separate": 1.0, "concat": 0.8, "batch": 1.1},
            },
            "batch",
        ),
        ({1: {"separate": 1.0, "concat": 1.2}, 2: {"separate": 1.0, "concat": 0.9}}, "separate"),
    ],
)
def test_choice_is_the_geometric_mean_ratio_to_separate(times, expected):
    assert choose(times) == expected


def test_without_measuring_the_concatenated_product_is_predicted():
    text = """def @main(%x: Tensor[(4, 16), float32], %a: Tensor[(8, 16), float32],
                        %b: Tensor[(8, 16), float32], %c: Tensor[(8, 16), float32]) {
      (nn.dense(%x, %a), nn.dense(%x, %b), nn.dense(%x, %c))
    }"""
    after = CombineParallelDense()(parse(text), PassContext(config={MEASURE: False}))
    assert "concatenate" in str(after)


def test_candidates_compiled_in_workers_leave_only_cache_reads_to_the_caller(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # empty caches: the workers fill them
    compiler_module.compiler_flags(compiler_module.find_compiler())  # its probes: once, first
    builds = record_compiler_runs(monkeypatch)  # this process only
    models = combine_cost._compiled_candidates(SMALL, ["separate", "concat", "batch"], None, 2)
    assert not builds
    inputs = candidate_inputs(SMALL)
    want = evaluate(candidate(SMALL, "separate"), *inputs)
    for out, expected in zip(models["separate"](*inputs), want, strict=True):
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        models["concat"](*inputs), np.concatenate(want, axis=-1), rtol=1e-5, atol=1e-5
    )


QKV = Signature("nn.dense", (128, 384), (384, 384, 384), "float32", "float32", True, "")


def test_the_prediction_settles_long_products_with_constant_weights():
    assert QKV.flops == 2 * 128 * 384 * 1152
    assert settled(QKV, None)
    assert not settled(SMALL, None)  # a few µs: the kernels' fixed costs decide, so measure
    computed = Signature("nn.dense", (128, 384), (384,) * 3, "float32", "float32", True, "", False)
    assert not settled(computed, None)  # the combined forms copy weights at run time
    # On 64 cores the group takes a few µs a core, so the kernels' fixed costs weigh again.
    assert not settled(QKV, Target(cores=64))


def _group(rows, width):
    params = ", ".join(f"%w{k}: Tensor[({width}, {width}), float32]" for k in range(3))
    outputs = ", ".join(f"nn.dense(%x, %w{k})" for k in range(3))
    text = f"def @main(%x: Tensor[({rows}, {width}), float32], {params}) {{ ({outputs}) }}"
    rng = np.random.default_rng(0)
    weights = {f"w{k}": rng.standard_normal((width, width)).astype("float32") for k in range(3)}
    return bind_params(parse(text), weights)


@pytest.mark.parametrize(
    ("rows", "mode", "measured"),
    [(128, True, False), (2, True, True), (128, "always", True), (2, False, False)],
    ids=["settled", "open", "always", "never"],
)
def test_measure_runs_only_where_the_config_and_the_prediction_leave_it(
    monkeypatch, rows, mode, measured
):
    calls = []

    def fake_measure(sig, *_):
        calls.append(sig)
        return {1: {"separate": 1.0, "concat": 0.5, "batch": 0.9}}

    monkeypatch.setattr(combine_cost, "measured_times", lambda sig, *a, **k: fake_measure(sig))
    after = CombineParallelDense()(_group(rows, 384), PassContext(config={MEASURE: mode}))
    assert bool(calls) == measured
    assert "concatenate" in str(after)


def test_an_unknown_measure_setting_is_refused():
    with pytest.raises(UserError, match="'sometimes'"):
        CombineParallelDense()(_group(2, 8), PassContext(config={MEASURE: "sometimes"}))


@pytest.mark.parametrize("constant", [True, False], ids=["constant-weights", "weights-as-inputs"])
def test_symbolic_rows_are_never_measured_and_combine_only_constant_weights(monkeypatch, constant):
    # Nothing to measure at a run-time row count: constant weights take the concatenated
    # product; weights computed at run time stay separate (batching them stacked the symbolic
    # data, which `stack` does not take: the pass crashed on such a graph).
    monkeypatch.setattr(combine_cost, "measured_times", lambda *a, **k: pytest.fail("measured"))
    params = ", ".join(f"%w{k}: Tensor[(8, 8), float32]" for k in range(3))
    outputs = ", ".join(f"tanh(nn.dense(%x, %w{k}))" for k in range(3))
    mod = parse(f"def @main(%x: Tensor[(n, 8), float32], {params}) {{ ({outputs}) }}")
    rng = np.random.default_rng(0)
    weights = {f"w{k}": rng.standard_normal((8, 8)).astype("float32") for k in range(3)}
    if constant:
        mod = bind_params(mod, weights)
    after = CombineParallelDense()(mod, PassContext())
    assert ("concatenate" in str(after)) == constant
    x = rng.standard_normal((5, 8)).astype("float32")
    args = [x] if constant else [x, *weights.values()]
    for ours, theirs in zip(evaluate(after, *args), evaluate(mod, *args), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
