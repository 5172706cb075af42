"""The ahead-of-time executor (tessel.graph.aot): the whole model is one TensorIR module whose
`main` allocates the arena once and calls the kernels in plan order; it agrees with the graph
evaluator, prints as TIR, reports its arena, and exports a library, header and weights that a
C program runs without Python."""

import os
import re

import numpy as np
import pytest
import safetensors.numpy as safetensors
from graph_models import (
    COLUMNS,
    INPUTS,
    MODELS,
    assert_close,
    exported_weights,
    link_against_export,
    load,
    random_inputs,
    random_weights,
    run_without_python,
)

import tessel.graph as graph
from tessel.graph import evaluate
from tessel.graph.aot import aot_module
from tessel.graph.passes.fuse_ops import MAX_ANCHORS
from tessel.ir.functor import post_order
from tessel.ir.transform import PassContext
from tessel.script.printer import script
from tessel.support.errors import UserError
from tessel.tir.module_calls import is_module_call, pointer_base, pointer_byte_offset
from tessel.tir.stmt import Allocate
from tessel.transform import lower
from tessel.transform.memory_usage import memory_usage


@pytest.fixture(scope="module")
def mlp():
    mod = load("mlp")
    weights = random_weights(mod, INPUTS["mlp"])
    # One kernel per layer (multi-anchor fusion off): the arena between kernels is what these
    # tests read; fused, the batch-2 MLP is one kernel.
    one_anchor = PassContext(config={MAX_ANCHORS: 1})
    return mod, weights, graph.compile(mod, params=weights, ctx=one_anchor)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_aot_main_matches_the_evaluator(name):
    mod = load(name)
    weights = random_weights(mod, INPUTS[name])
    model = graph.compile(mod, params=weights, executor="aot")
    assert model.executor == "aot"
    for seed in (1, 7):
        inputs = random_inputs(mod, INPUTS[name], seed=seed)
        assert_close(model(*inputs), evaluate(mod, *inputs, params=weights))
    # one C entry runs the model: its parameters are the inputs, one table of the weights'
    # pointers, the outputs
    params = model.library["main"].signature.params
    kinds = [p.kind for p in model.aot.params]
    assert kinds == sorted(kinds, key=["input", "weight", "output"].index)
    assert [p.name for p in params] == list(model.aot.entry_names())
    table = params[len(model.aot.of_kind("input"))]
    assert table.name == model.aot.weight_table
    assert (table.dtype, table.shape) == ("handle", (len(model.aot.of_kind("weight")),))


def test_aot_is_the_default_and_agrees_with_the_python_loop(mlp):
    mod, weights, model = mlp
    assert model.executor == "aot"
    loop = graph.compile(mod, params=weights, executor="python")
    assert loop.executor == "python"
    assert loop.aot is None
    (x,) = random_inputs(mod, INPUTS["mlp"])
    np.testing.assert_allclose(model(x), loop(x), rtol=1e-6, atol=1e-6)


def test_weights_are_parameters_named_as_bound(mlp):
    """Dense weights are packed at compile time (LayoutRewrite) and named `<param>_packed`:
    W[j, k] as [j // COLUMNS, k, j % COLUMNS], zero-padded; the biases are passed as bound."""
    _, weights, model = mlp
    names = [p.name for p in model.aot.of_kind("weight")]
    assert names == ["w1_packed", "b1", "w2_packed", "b2", "w3_packed", "b3"]
    held = exported_weights(weights)
    for p in model.aot.of_kind("weight"):
        np.testing.assert_array_equal(model.weights[p.index], held[p.name])
    assert "static const float" not in model.library.source  # no weight embedded as C text


def test_main_prints_one_arena_and_the_kernel_calls_in_plan_order(mlp):
    _, _, model = mlp
    main = model.aot.mod["main"]
    text = script(main)
    assert text.count("T.allocate(") == 1
    assert f'arena = T.allocate([{model.plan.peak_bytes}], "uint8", "global.workspace")' in text
    called = re.findall(r"Module\.(\w+)\(", text)
    assert called == [c.kernel for c in model.plan.calls]
    calls = [n for n in post_order(main.body) if is_module_call(n)]
    assert [c.op.name_hint for c in calls] == [c.kernel for c in model.plan.calls]
    allocations = [n for n in post_order(main.body) if isinstance(n, Allocate)]
    assert len(allocations) == 1
    assert allocations[0].buffer_var.type_annotation.storage_scope == "global.workspace"


def test_intermediates_are_arena_addresses_at_the_planned_offsets(mlp):
    # No typed view per tensor: each would be a DeclBuffer around the rest of main, a nest
    # as deep as the model (issue 25); the callee's parameter types the bytes.
    _, _, model = mlp
    main = model.aot.mod["main"]
    calls = [n for n in post_order(main.body) if is_module_call(n)]
    for call, planned in zip(calls, model.plan.calls, strict=True):
        for arg, slot_id in zip(call.args, planned.inputs + planned.outputs, strict=True):
            slot = model.plan.tensors[slot_id]
            if slot.kind == "intermediate":
                assert slot.offset % model.plan.alignment == 0
                assert pointer_base(arg).name == "arena"
                assert pointer_byte_offset(arg) == slot.offset
    assert "T.address_of(arena[" in script(main)


def test_memory_usage_reports_the_arena(mlp):
    _, _, model = mlp
    report = memory_usage(lower(model.aot.mod))
    kernels = max(report[c.kernel].workspace_bytes for c in model.plan.calls)
    assert report["main"].workspace_bytes == model.plan.peak_bytes + kernels
    assert report["main"].constant_bytes == 0  # weights are parameters, not constants


def test_aot_module_from_a_plan_directly(mlp):
    _, _, model = mlp
    aot = aot_module(model.lowered, model.plan)
    assert [p.name for p in aot.of_kind("weight")] == [f"constant_{k}" for k in range(6)]
    assert [p.name for p in aot.of_kind("output")] == ["output"]


def test_wrong_input_shape_still_names_the_input(mlp):
    _, _, model = mlp
    with pytest.raises(ValueError, match=r"input `x`: expected shape \(2, 784\), got \(3, 784\)"):
        model(np.zeros((3, 784), "float32"))


def test_read_only_inputs_are_accepted(mlp):
    mod, weights, model = mlp
    (x,) = random_inputs(mod, INPUTS["mlp"])
    x.flags.writeable = False
    assert_close(model(x), evaluate(mod, x, params=weights))


def test_unknown_executor_is_refused():
    with pytest.raises(UserError, match="unknown executor 'graph'"):
        graph.compile(load("mlp"), executor="graph")


def test_export_writes_library_header_and_weights(mlp, tmp_path):

    _, weights, model = mlp
    out = model.export(tmp_path / "mlp")
    assert sorted(os.listdir(out)) == ["model.h", "model.so", "params.bin", "params.safetensors"]
    loaded = safetensors.load_file(str(out / "params.safetensors"))
    held = exported_weights(weights)  # dense weights pre-packed by LayoutRewrite
    assert sorted(loaded) == sorted(held)
    for name, array in held.items():
        np.testing.assert_array_equal(loaded[name], array)
    raw = np.fromfile(out / "params.bin", "<f4")
    assert raw.size == sum(w.size for w in held.values())
    header = (out / "model.h").read_text()
    assert "int32_t v_main(float* x, void** weights, float* output);" in header  # the raw entry
    assert "#define TESSEL_MODEL_NUM_ARGS 3" in header
    assert "#define TESSEL_MODEL_NUM_TENSORS 8" in header
    shape = f"{{{512 // COLUMNS}, 784, {COLUMNS}}}"
    assert f'{{"w1_packed", "weight", "float32", 3, {shape}, 1605632, 0, 9}},' in header
    assert '{"output", "output", "float32", 2, {2, 10, 0}, 80, -1, 6},' in header  # rank 3 max


C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.h"

int main(int argc, char** argv) {
  void* args[TESSEL_MODEL_NUM_TENSORS];
  void* weights[TESSEL_MODEL_NUM_WEIGHTS + 1];  /* main's weight table, in the tensors' order */
  int num_weights = 0;
  (void)weights;  /* unused when the weights are linked (link_params) */
  FILE* params = fopen(argv[1], "rb");
  FILE* inputs = fopen(argv[2], "rb");
  if (params == NULL || inputs == NULL) return 2;
  for (int i = 0; i < TESSEL_MODEL_NUM_TENSORS; ++i) {
    const tessel_model_tensor_t* t = &tessel_model_tensors[i];
    args[i] = aligned_alloc(64, (size_t)(t->nbytes / 64 + 1) * 64);
    FILE* from = NULL;
    if (t->params_offset >= 0) {
      from = params;
      fseek(params, (long)t->params_offset, SEEK_SET);
    } else if (t->kind[0] == 'i') {
      from = inputs;
    }
    if (from != NULL && fread(args[i], 1, (size_t)t->nbytes, from) != (size_t)t->nbytes) return 3;
    if (t->kind[0] == 'w') weights[num_weights++] = args[i];
  }
  int32_t status = v_main(@ARGS@);  /* the raw entry: inputs, the weight table, outputs */
  if (status != 0) {
    fprintf(stderr, "failed: %s\n", tessel_get_last_error());
    return 1;
  }
  for (int i = 0; i < TESSEL_MODEL_NUM_TENSORS; ++i) {
    const tessel_model_tensor_t* t = &tessel_model_tensors[i];
    if (t->kind[0] != 'o') continue;
    const float* values = (const float*)args[i];
    for (int64_t k = 0; k < t->nbytes / 4; ++k) printf("%.9g\n", values[k]);
  }
  return 0;
}
"""


def test_exported_mlp_runs_from_a_c_program(mlp, tmp_path):
    mod, _, model = mlp
    out = model.export(tmp_path / "mlp")
    (x,) = random_inputs(mod, INPUTS["mlp"], seed=5)
    x.astype("<f4").tofile(tmp_path / "x.bin")
    aot = model.aot
    rows = [f"args[{i}]" for i, p in enumerate(aot.params) if p.kind != "weight"]
    inputs = len(aot.of_kind("input"))
    program = C_PROGRAM.replace("@ARGS@", ", ".join([*rows[:inputs], "weights", *rows[inputs:]]))
    (tmp_path / "run.c").write_text(program)
    exe = link_against_export(tmp_path / "run.c", out, tmp_path / "run", "-O2")
    result = run_without_python([str(exe), str(out / "params.bin"), str(tmp_path / "x.bin")])
    printed = np.array([float(v) for v in result.stdout.split()], "float32").reshape(2, 10)
    np.testing.assert_allclose(printed, model(x), rtol=1e-5, atol=1e-5)


def test_aot_model_makes_one_c_call_per_inference(mlp, monkeypatch):
    # The AOT executor's point: one foreign call runs every kernel, with no Python between
    # them. Its speed against the Python loop is a benchmark's business (benchmarks/models.py).
    mod, weights, model = mlp
    loop = graph.compile(mod, params=weights, executor="python")
    (x,) = random_inputs(mod, INPUTS["mlp"])
    calls = []
    main = model._main
    monkeypatch.setattr(model, "_main", lambda *args: calls.append(len(args)) or main(*args))
    np.testing.assert_allclose(model(x), loop(x), rtol=1e-5, atol=1e-6)
    assert calls == [len(model.aot.params) - len(model.aot.of_kind("weight"))]  # weights bound
    assert not hasattr(model, "_kernels")
