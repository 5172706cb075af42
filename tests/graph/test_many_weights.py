"""A model with more weights than a C call takes arguments (ctypes allows 1,024; the fastcall
64) compiles and runs: the AOT main takes its weights as one table of pointers
(tessel.graph.aot), through Python and through the exported C API."""

import numpy as np
import pytest
from test_export_c_api import build_example, run_example

import tessel.graph as graph
from tessel.graph import Call, Function, Op, TensorType, Var
from tessel.ir.module import IRModule

LAYERS = 750  # a dense weight and a bias each: 1,500 weights


def _dense_bias_chain(layers: int) -> tuple[IRModule, dict[str, np.ndarray]]:
    """`main(x)`: `layers` times x = dense(x, w_k) + b_k, each with its own 4x4 weight and bias
    (the kernels are one by structure, so only a few are compiled)."""
    x = Var("x", TensorType((1, 4), "float32"))
    rng = np.random.default_rng(0)
    params, weights, body = [], {}, x
    for k in range(layers):
        w = Var(f"w{k}", TensorType((4, 4), "float32"))
        b = Var(f"b{k}", TensorType((4,), "float32"))
        params += [w, b]
        # orthogonal weights keep the values in range over 750 layers
        weights[w.name_hint] = np.linalg.qr(rng.standard_normal((4, 4)))[0].astype("float32")
        weights[b.name_hint] = (0.1 * rng.standard_normal(4)).astype("float32")
        body = Call(Op("nn.bias_add"), (Call(Op("nn.dense"), (body, w), {"units": 4}), b))
    return IRModule.from_dict({"main": Function((x, *params), body)}), weights


@pytest.fixture(scope="module")
def chain():
    mod, weights = _dense_bias_chain(LAYERS)
    return mod, weights, graph.compile(mod, weights)


def test_1500_weights_compile_and_match_the_evaluator(chain):
    mod, weights, model = chain
    assert len(model.aot.of_kind("weight")) == 2 * LAYERS
    entry = model.library["main"].signature.params
    assert [p.name for p in entry] == ["x", "weights", "output"]  # one table, not 1,500 pointers
    x = np.array([[0.5, -1.0, 2.0, 0.25]], "float32")
    expected = graph.evaluate(mod, x, params=weights)
    np.testing.assert_allclose(model(x), expected, rtol=1e-4, atol=1e-4)
    assert model._main._fast is not None  # the call was checked and made in C (fastcall)
    np.testing.assert_allclose(
        model(2 * x), graph.evaluate(mod, 2 * x, params=weights), rtol=1e-4, atol=1e-4
    )


def test_1500_weights_run_through_the_exported_c_api(chain, tmp_path):
    _, _, model = chain
    out = model.export(tmp_path / "chain")
    header = (out / "model.h").read_text()
    assert f"#define TESSEL_MODEL_NUM_WEIGHTS {2 * LAYERS}" in header
    assert "int32_t v_main(float* x, void** weights, float* output);" in header
    exe = build_example(out, tmp_path)
    x = np.array([[0.5, -1.0, 2.0, 0.25]], "float32")
    x.astype("<f4").tofile(tmp_path / "x.bin")
    results = run_example(exe, out, tmp_path, tmp_path / "x.bin")
    got = np.fromfile(results / "output_0.bin", "<f4").reshape(1, 4)
    np.testing.assert_allclose(got, model(x), rtol=1e-5, atol=1e-5)
