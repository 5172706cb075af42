"""tessel.graph.compile: models in the text format compiled to C kernels on one arena give the
NumPy evaluator's results; inputs are checked (ValueError naming the input), PyTorch tensors
are accepted, weights bind by name or come at call time, tuple results come back as tuples."""

import numpy as np
import pytest
from graph_models import INPUTS, MODELS, assert_close, load, random_inputs, random_weights

import tessel.graph as graph
from tessel.graph import ModelInputError, evaluate, parse
from tessel.graph.passes.infer_type import InferType
from tessel.support.errors import UserError


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_the_evaluator(name):
    mod = load(name)
    weights = random_weights(mod, INPUTS[name])
    inputs = random_inputs(mod, INPUTS[name])
    model = graph.compile(mod, params=weights)
    expected = evaluate(mod, *inputs, params=weights)
    assert_close(model(*inputs), expected)
    assert_close(
        model(*random_inputs(mod, INPUTS[name], seed=7)),
        evaluate(mod, *random_inputs(mod, INPUTS[name], seed=7), params=weights),
    )
    literals = {"attention": 1}.get(name, 0)  # the attention's 0.25f scale is a constant too
    # the cnn's batch norm on the blocked conv output: its four vectors folded into a scale and
    # a shift (AlterOpLayout)
    folded = {"cnn": 2}.get(name, 0)
    # one constant per weight (dense and conv weights pre-packed by LayoutRewrite, padded)
    assert len(model.plan.constants) == len(weights) + literals - folded
    assert model.plan.constant_bytes == sum(c.nbytes for c in model.plan.constants)
    assert model.plan.constant_bytes >= sum(w.nbytes for w in weights.values())


@pytest.fixture(scope="module")
def mlp():
    mod = load("mlp")
    weights = random_weights(mod, INPUTS["mlp"])
    return mod, weights, graph.compile(mod, params=weights)


def test_wrong_input_shape_names_the_input(mlp):
    _, _, model = mlp
    with pytest.raises(ValueError, match=r"input `x`: expected shape \(2, 784\), got \(3, 784\)"):
        model(np.zeros((3, 784), "float32"))


def test_wrong_dtype_and_kind_are_refused(mlp):
    _, _, model = mlp
    with pytest.raises(ModelInputError, match="input `x`: expected dtype float32, got float64"):
        model(np.zeros((2, 784)))
    with pytest.raises(ValueError, match="input `x`: expected a NumPy array"):
        model([[0.0] * 784] * 2)
    with pytest.raises(ValueError, match="no value for input `x`"):
        model()


def test_pytorch_tensor_input(mlp):
    torch = pytest.importorskip("torch")
    mod, weights, model = mlp
    x = torch.randn(2, 784)
    assert_close(model(x), evaluate(mod, x.numpy(), params=weights))


def test_strided_inputs_are_accepted(mlp):
    mod, weights, model = mlp
    x = np.random.default_rng(3).normal(size=(784, 2)).astype("float32").T  # not C-contiguous
    assert_close(model(x), evaluate(mod, x, params=weights))


def test_weights_passed_at_call_time_by_name_or_position():
    mod = load("mlp")
    weights = random_weights(mod, INPUTS["mlp"])
    (x,) = random_inputs(mod, INPUTS["mlp"])
    partly = {k: v for k, v in weights.items() if k != "w3"}
    model = graph.compile(mod, params=partly)
    assert [i.name for i in model.inputs] == ["x", "w3"]
    expected = evaluate(mod, x, params=weights)
    assert_close(model(x, weights["w3"]), expected)
    assert_close(model(x, w3=weights["w3"]), expected)


def test_unknown_param_name_is_an_error():
    with pytest.raises(UserError, match="names no parameter of main"):
        graph.compile(load("mlp"), params={"w9": np.zeros(3)})


def test_tuple_results_and_results_that_are_inputs():
    mod = InferType()(
        parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(2, 6), float32]) {
  %0 = split(%x, indices_or_sections=2, axis=1);
  %1 = nn.relu(%0.0);
  (%1, %0.1, %x, %1)
}
""")
    )
    model = graph.compile(mod)
    x = np.random.default_rng(0).normal(size=(2, 6)).astype("float32")
    out = model(x)
    assert isinstance(out, tuple) and len(out) == 4
    for got, want in zip(out, evaluate(mod, x), strict=True):
        np.testing.assert_array_equal(got, want)
    assert out[2] is not x and out[3] is not out[0]  # results are the caller's own arrays
    again = model(x * 2)
    np.testing.assert_array_equal(out[2], x)  # earlier results are not overwritten
    np.testing.assert_array_equal(again[2], x * 2)


def test_explicit_passes_and_a_typed_module_compile_the_same():
    mod = load("attention")
    weights = random_weights(mod, INPUTS["attention"])
    inputs = random_inputs(mod, INPUTS["attention"])
    model = graph.compile(parse(MODELS["attention"]), params=weights, passes=[InferType()])
    assert_close(model(*inputs), evaluate(mod, *inputs, params=weights))


def test_compile_fuses_when_fuse_ops_is_available():
    pytest.importorskip("tessel.graph.passes.fuse_ops")
    mod = load("mlp")
    model = graph.compile(mod, params=random_weights(mod, INPUTS["mlp"]))
    assert [c.kernel for c in model.plan.calls] == [
        "fused_nn_dense_nn_bias_add_nn_relu",
        "fused_nn_dense_nn_bias_add_nn_relu_1",
        "fused_nn_dense_nn_bias_add",
    ]


@pytest.mark.parametrize("executor", ["aot", "python"])
def test_reshapes_sharing_storage_give_the_evaluators_results(executor):
    mod = parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(4, 6), float32], %w: Tensor[(8, 6), float32], %v: Tensor[(5, 4), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = reshape(%0, newshape=[2, 16]);
  %2 = reshape(%1, newshape=[8, 4]);
  %3 = nn.dense(%2, %v);
  (%3, reshape(%3, newshape=[40]))
}
""")
    model = graph.compile(mod, executor=executor)
    assert any(t.alias_of >= 0 for t in model.plan.tensors)  # the reshapes of %0 share its bytes
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype("float32") for s in ((4, 6), (8, 6), (5, 4))]
    for got, want in zip(model(*args), evaluate(mod, *args), strict=True):
        assert_close(got, want)
