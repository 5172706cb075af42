"""The model zoo (tessel.testing.zoo): every architecture, in its small configuration, exported
by both of PyTorch's exporters, imports, compiles and matches onnxruntime on the same inputs
(1e-4 relative to the output's scale; the same top-1 class for classifiers)."""

import importlib.util

import numpy as np
import onnx
import pytest

from tessel.frontend.onnx import from_onnx
from tessel.graph import compile as compile_graph
from tessel.graph.evaluate import evaluate
from tessel.testing import zoo

pytest.importorskip("torch")
if importlib.util.find_spec("torchvision") is None:
    pytest.skip("the zoo needs torchvision", allow_module_level=True)
zoo.import_torchvision()  # its operator schemas first: timm and transformers import it
pytest.importorskip("timm")
pytest.importorskip("transformers")
onnxruntime = pytest.importorskip("onnxruntime")

CASES = [(model.name, exporter) for model in zoo.ZOO for exporter in zoo.EXPORTERS]


def _onnxruntime_outputs(data: bytes, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: inputs[i.name] for i in session.get_inputs()})


@pytest.mark.parametrize(("name", "exporter"), CASES, ids=[f"{n}-{e}" for n, e in CASES])
def test_zoo_model_matches_onnxruntime(name, exporter):
    model = zoo.BY_NAME[name]
    data = zoo.export(model, exporter)
    inputs = model.inputs(False)
    expected = _onnxruntime_outputs(data, inputs)

    onnx_model = onnx.load_from_string(data)
    mod, params = from_onnx(onnx_model)
    compiled = compile_graph(mod, params)
    graph_inputs = [i.name for i in onnx_model.graph.input if i.name not in params]
    got = compiled(*[inputs[n] for n in graph_inputs])
    got = got if isinstance(got, tuple) else (got,)

    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        scale = float(np.max(np.abs(theirs))) or 1.0
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * scale)
    if model.family != "nlp":  # classifiers: the same class for every image
        np.testing.assert_array_equal(got[0].argmax(-1), expected[0].argmax(-1))


def test_zoo_covers_the_families_users_deploy():
    families = {model.family for model in zoo.ZOO}
    assert families == {"cnn", "vit", "nlp"}
    assert len({model.name for model in zoo.ZOO}) == len(zoo.ZOO) >= 15


# Every architecture by the TorchScript exporter, and one of each family by dynamo (its exports
# take seconds each), with the batch (and a language model's sequence) axes dynamic: each
# evaluated and (the TorchScript exports) compiled once, a CNN also run at batch 16, against
# onnxruntime at each size.
DYNAMIC_CASES = [(model.name, "torchscript") for model in zoo.ZOO] + [
    ("resnet", "dynamo"),
    ("vit", "dynamo"),
    ("gpt2", "dynamo"),
]


def _sized_inputs(model, batch: int, seq: int) -> dict[str, np.ndarray]:
    """The model's inputs at `batch` (images repeated; token ids drawn, masks all ones)."""
    rng = np.random.default_rng(batch * 100 + seq)
    inputs = {}
    for name, example in model.inputs(False).items():
        if model.family != "nlp":
            inputs[name] = np.concatenate([example] * batch)
        elif "mask" in name:
            inputs[name] = np.ones((batch, seq), example.dtype)
        else:
            inputs[name] = rng.integers(0, 100, (batch, seq)).astype(example.dtype)
    return inputs


@pytest.mark.parametrize(
    ("name", "exporter"), DYNAMIC_CASES, ids=[f"{n}-{e}" for n, e in DYNAMIC_CASES]
)
def test_zoo_model_with_dynamic_axes_imports_and_compiles_once_and_runs_every_size(name, exporter):
    model = zoo.BY_NAME[name]
    data = zoo.export(model, exporter, dynamic=True)
    dims = {"batch": (1, 64), **({"seq": (1, 16)} if model.family == "nlp" else {})}
    mod, params = from_onnx(onnx.load_from_string(data), dims=dims)
    graph_inputs = [p.name_hint for p in mod["main"].params if p.name_hint not in params]
    # Compiled from the TorchScript exports (the dynamo ones are the same architectures, the
    # same kernels: evaluated only, as the CI's time allows).
    compiled = compile_graph(mod, params) if exporter == "torchscript" else None
    sizes = [(1, 5), (3, 16)] + ([(16, 16)] if model.family == "cnn" and compiled else [])
    for batch, seq in sizes:
        inputs = _sized_inputs(model, batch, seq)
        expected = _onnxruntime_outputs(data, inputs)
        runs = [] if compiled is None else [compiled(*[inputs[n] for n in graph_inputs])]
        if batch < 16:  # the reference evaluator too (slow at batch 16)
            runs.append(evaluate(mod, *[inputs[n] for n in graph_inputs], params=params))
        for got in runs:
            got = got if isinstance(got, tuple) else (got,)
            for ours, theirs in zip(got, expected, strict=True):
                assert ours.shape == theirs.shape
                scale = float(np.max(np.abs(theirs))) or 1.0
                np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * scale)
