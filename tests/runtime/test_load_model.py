"""`tessel.runtime.load_model`: an export of `CompiledModel.export` run through its C API, as
the compiled model runs it: the same outputs, the inputs and outputs described by model.so,
weights from params.safetensors, params.bin or linked into the library, and clear errors."""

import os

import numpy as np
import pytest

from tessel import graph
from tessel.ir.target import Target
from tessel.runtime import ExportedModel, RuntimeCallError, TensorSpec, load_model
from tessel.support.errors import UserError

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {
  %0 = nn.dense(%x, %w, units=4);
  %1 = nn.bias_add(%0, %b);
  (nn.relu(%1), %1)
}
"""
SINGLE = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 5), float32], %y: Tensor[(3, 5), float32], %w: Tensor[(3, 5), float32]) {
  add(multiply(%x, %w), %y)
}
"""


def _weights(*shapes):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s).astype("float32") for s in shapes]


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    w, b = _weights((4, 8), (4,))
    model = graph.compile(graph.parse(MLP), params={"w": w, "b": b})
    return model, model.export(tmp_path_factory.mktemp("mlp") / "model")


def test_outputs_match_the_compiled_model(mlp):
    model, out = mlp
    loaded = load_model(out)
    assert isinstance(loaded, ExportedModel)
    assert loaded.inputs == (TensorSpec("x", (2, 8), "float32"),)
    assert [(s.name, s.shape, s.dtype) for s in loaded.outputs] == [
        (o.name, o.shape, o.dtype) for o in model.outputs
    ]
    assert loaded.params_path == out / "params.safetensors"
    x = np.random.default_rng(2).standard_normal((2, 8)).astype("float32")
    got = loaded(x)
    assert isinstance(got, tuple)
    assert len(got) == 2
    for value, expected in zip(got, model(x), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-6)
    for value, expected in zip(loaded(x=x), got, strict=True):  # by name
        np.testing.assert_array_equal(value, expected)
    read_only = x.copy()
    read_only.setflags(write=False)
    np.testing.assert_array_equal(loaded(np.asfortranarray(read_only))[1], got[1])
    loaded.close()
    loaded.close()  # twice: nothing left to free


def test_params_bin_gives_the_same_weights(mlp):
    model, out = mlp
    x = np.ones((2, 8), "float32")
    loaded = load_model(out, params=out / "params.bin")
    np.testing.assert_allclose(loaded(x)[1], model(x)[1], rtol=1e-6, atol=1e-6)


def test_linked_weights_need_no_params_file(tmp_path):
    (w,) = _weights((3, 5))
    model = graph.compile(
        graph.parse(SINGLE), params={"w": w}, target=Target.detect(link_params=True)
    )
    out = model.export(tmp_path / "linked")
    assert sorted(os.listdir(out)) == ["model.h", "model.so"]
    loaded = load_model(out)
    assert loaded.params_path is None
    x, y = _weights((3, 5), (3, 5))
    got = loaded(x, y=y)
    assert isinstance(got, np.ndarray)  # one output: the array itself
    np.testing.assert_allclose(got, model(x, y), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "named", "message"),
    [
        ((np.zeros((2, 7), "float32"),), {}, "expected shape (2, 8)"),
        ((np.zeros((2, 8), "float64"),), {}, "expected dtype float32"),
        ((), {}, "no value for input `x`"),
        ((), {"z": 1}, "no input named ['z']"),
        ((np.zeros((2, 8), "float32"),) * 2, {}, "2 arguments, but the model has 1 inputs"),
    ],
)
def test_bad_inputs_are_clear_errors(mlp, args, named, message):
    with pytest.raises(UserError) as info:
        load_model(mlp[1])(*args, **named)
    assert message in str(info.value)


def test_a_missing_or_bad_export_is_a_clear_error(mlp, tmp_path):
    with pytest.raises(UserError, match="cannot load"):
        load_model(tmp_path / "nothing")
    (tmp_path / "short.bin").write_bytes((mlp[1] / "params.bin").read_bytes()[:-4])
    with pytest.raises(UserError, match="params.bin holds"):
        load_model(mlp[1], params=tmp_path / "short.bin")
    assert issubclass(RuntimeCallError, UserError)
