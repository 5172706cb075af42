"""Linked weights (docs/architecture.md §8): with `Target(link_params=True)`, `graph.compile` makes
the bound weights constants of the AOT main, which the C backend links into the library as a
binary blob; the model then takes only inputs and outputs, and exports without params files."""

import os

import numpy as np
import pytest
from graph_models import (
    INPUTS,
    exported_weights,
    link_against_export,
    load,
    random_inputs,
    random_weights,
    run_without_python,
)
from test_aot import C_PROGRAM

import tessel.graph as graph
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.tir.stmt import AllocateConst
from tessel.transform import lower
from tessel.transform.memory_usage import memory_usage

LINKED = Target(link_params=True)


@pytest.fixture(scope="module")
def mlp():
    mod = load("mlp")
    weights = random_weights(mod, INPUTS["mlp"])
    return mod, weights, graph.compile(mod, params=weights, target=LINKED)


def test_linked_and_passed_weights_give_identical_outputs(mlp):
    mod, weights, linked = mlp
    passed = graph.compile(mod, params=weights, target=Target())  # the same C flags, unlinked
    for seed in (1, 4):
        (x,) = random_inputs(mod, INPUTS["mlp"], seed=seed)
        np.testing.assert_array_equal(linked(x), passed(x))


def test_main_takes_only_the_input_and_the_output(mlp):
    _, weights, model = mlp
    params = model.library["main"].signature.params
    assert [p.name for p in params] == ["x", "output"]
    assert [p.kind for p in model.aot.params] == ["input", "output"]
    assert model.weights == ()
    constants = [n for n in post_order(model.aot.mod["main"].body) if isinstance(n, AllocateConst)]
    held = exported_weights(weights)  # dense weights pre-packed by LayoutRewrite
    assert sorted(c.buffer_var.name for c in constants) == sorted(held)
    assert all(c.data is not None for c in constants)  # ExtractConstants hoists them later
    report = memory_usage(lower(model.aot.mod, LINKED))
    assert report["main"].constant_bytes == sum(w.nbytes for w in held.values())


def test_the_weights_are_not_c_text(mlp):
    mod, weights, model = mlp
    weight_bytes = sum(w.nbytes for w in weights.values())  # 2.6 MB
    passed = graph.compile(mod, params=weights, target=Target())  # no weights in its C at all
    # Linking adds the blob's declarations (a few lines per weight), not the 2.6 MB as text.
    assert len(model.library.source) - len(passed.library.source) < 4_000
    assert len(model.library.source) < weight_bytes // 25
    assert ".incbin" in model.library.source


def test_export_writes_no_params_files(mlp, tmp_path):
    mod, _, model = mlp
    out = model.export(tmp_path / "mlp")
    assert sorted(os.listdir(out)) == ["model.h", "model.so"]
    header = (out / "model.h").read_text()
    assert "#define TESSEL_MODEL_NUM_WEIGHTS 0" in header
    assert "int32_t v_main(float* x, float* output);" in header  # the raw entry `main`
    (x,) = random_inputs(mod, INPUTS["mlp"], seed=5)
    x.astype("<f4").tofile(tmp_path / "x.bin")
    (tmp_path / "none.bin").write_bytes(b"")  # the program opens a params file; nothing is read
    (tmp_path / "run.c").write_text(C_PROGRAM.replace("@ARGS@", "args[0], args[1]"))
    exe = link_against_export(tmp_path / "run.c", out, tmp_path / "run", "-O2")
    result = run_without_python([str(exe), str(tmp_path / "none.bin"), str(tmp_path / "x.bin")])
    printed = np.array([float(v) for v in result.stdout.split()], "float32").reshape(2, 10)
    np.testing.assert_allclose(printed, model(x), rtol=1e-5, atol=1e-5)
