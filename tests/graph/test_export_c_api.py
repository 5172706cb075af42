"""The exported model's C API (tessel.graph.c_api): examples/c/run_model.c loads an exported ONNX
model through it and gives Python's results; names keep ONNX's, however hostile, and never
become C text; bad weights files are refused with a reason."""

import ctypes
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from graph_models import link_against_export, run_without_python
from onnx import TensorProto, helper, numpy_helper
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from tessel import graph
from tessel.frontend.onnx import from_onnx
from tessel.ir.target import Target

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "c" / "run_model.c"
PLAIN = {"x": "x", "w": "conv.weight", "b": "conv.bias", "fw": "fc.weight", "y": "y", "z": "z"}


def tiny_onnx(names):
    """Conv + bias + ReLU, flattened, MatMul: two outputs (the logits and the ReLU)."""
    n = names
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    fw = rng.standard_normal((4 * 6 * 6, 5)).astype("float32")
    nodes = [
        helper.make_node("Conv", [n["x"], n["w"], n["b"]], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], [n["z"]]),
        helper.make_node("Flatten", [n["z"]], ["f"]),
        helper.make_node("MatMul", ["f", n["fw"]], [n["y"]]),
    ]
    graph_proto = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info(n["x"], TensorProto.FLOAT, [1, 3, 6, 6])],
        [
            helper.make_tensor_value_info(n["y"], TensorProto.FLOAT, [1, 5]),
            helper.make_tensor_value_info(n["z"], TensorProto.FLOAT, [1, 4, 6, 6]),
        ],
        [
            numpy_helper.from_array(w, n["w"]),
            numpy_helper.from_array(b, n["b"]),
            numpy_helper.from_array(fw, n["fw"]),
        ],
    )
    return helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])


def example_input(k, shape):
    """The input run_model.c makes up for input k when given no file."""
    j = np.arange(int(np.prod(shape)))
    return (((j * 7 + k * 3) % 17) / 8.0 - 1.0).astype("float32").reshape(shape)


def build_example(out, tmp_path):
    """examples/c/run_model.c built against the export in `out`."""
    return link_against_export(EXAMPLE, out, tmp_path / "run_model", "-O2", "-Wextra")


def run_example(exe, out, tmp_path, *inputs):
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    run_without_python([str(exe), str(out), "--out", str(results), *map(str, inputs)])
    return results


def check_outputs(model, results, x):
    for k, (spec, expected) in enumerate(zip(model.outputs, model(x), strict=True)):
        got = np.fromfile(results / f"output_{k}.bin", "<f4").reshape(spec.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def tiny():
    mod, _ = from_onnx(tiny_onnx(PLAIN))
    return graph.compile(mod)


def test_names_are_onnx_names(tiny, tmp_path):
    assert [o.name for o in tiny.outputs] == ["y", "z"]
    assert [i.name for i in tiny.inputs] == ["x"]
    out = tiny.export(tmp_path / "tiny")
    with safe_open(str(out / "params.safetensors"), "np") as f:
        keys = sorted(f.keys())
    # Each weight is named after its initializer: folded (blocked layout, transposed at import)
    # and packed by a kernel's schedule, but never `constant_<k>`.
    assert all(k.startswith(("conv.weight", "conv.bias", "fc.weight")) for k in keys), keys
    header = (out / "model.h").read_text()
    assert '{"y", "output", "float32", 2, {1, 5, 0, 0, 0, 0}, 20, -1, 1},' in header


def test_example_program_matches_python(tiny, tmp_path):
    out = tiny.export(tmp_path / "tiny")
    exe = build_example(out, tmp_path)
    x = example_input(0, (1, 3, 6, 6))
    check_outputs(tiny, run_example(exe, out, tmp_path), x)
    x = np.random.default_rng(3).standard_normal((1, 3, 6, 6)).astype("float32")
    x.astype("<f4").tofile(tmp_path / "x.bin")
    check_outputs(tiny, run_example(exe, out, tmp_path, tmp_path / "x.bin"), x)


class Api:
    """model.so's C API through ctypes."""

    def __init__(self, library):
        self.lib = lib = ctypes.CDLL(str(library))
        lib.tessel_model_create.restype = ctypes.c_void_p
        lib.tessel_model_create.argtypes = [ctypes.c_char_p]
        lib.tessel_model_destroy.argtypes = [ctypes.c_void_p]
        lib.tessel_model_run.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_void_p)] * 2
        lib.tessel_model_last_error.restype = ctypes.c_char_p
        lib.tessel_model_input_index.argtypes = [ctypes.c_char_p]
        lib.tessel_model_output_index.argtypes = [ctypes.c_char_p]

    def create(self, path):
        handle = self.lib.tessel_model_create(None if path is None else str(path).encode())
        return handle, self.lib.tessel_model_last_error().decode()

    def run(self, handle, inputs, outputs):
        pointers = [ctypes.c_void_p(a.ctypes.data) for a in inputs]
        ins = (ctypes.c_void_p * max(len(inputs), 1))(*pointers)
        outs = (ctypes.c_void_p * len(outputs))(*[a.ctypes.data for a in outputs])
        return self.lib.tessel_model_run(handle, ins, outs)


def test_create_reads_safetensors_or_params_bin_and_refuses_bad_files(tiny, tmp_path):
    out = tiny.export(tmp_path / "tiny")
    api = Api(out / "model.so")
    x = example_input(0, (1, 3, 6, 6))
    for params in ("params.safetensors", "params.bin"):
        handle, _ = api.create(out / params)
        assert handle
        outputs = [np.zeros(o.shape, "float32") for o in tiny.outputs]
        assert api.run(handle, [x], outputs) == 0
        for got, expected in zip(outputs, tiny(x), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        api.lib.tessel_model_destroy(handle)
    assert api.lib.tessel_model_input_index(b"x") == 0
    assert api.lib.tessel_model_output_index(b"z") == 1
    assert api.lib.tessel_model_output_index(b"nope") == -1
    data = (out / "params.safetensors").read_bytes()
    bad = {
        "missing.safetensors": None,
        "short.safetensors": data[:-4],
        "header.safetensors": data[:8] + b"[" + data[9:],
        "short.bin": (out / "params.bin").read_bytes()[:-4],
        "f64.safetensors": data.replace(b'"F32"', b'"F64"', 1),
    }
    expected = {"missing": "cannot open", "short.s": "bytes [", "header": "not valid JSON",
                "short.b": "params.bin holds", "f64": "dtype F64"}  # fmt: skip
    for name, content in bad.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        handle, error = api.create(tmp_path / name)
        assert not handle
        assert next(v for k, v in expected.items() if name.startswith(k)) in error, error
    handle, error = api.create(None)
    assert not handle and "params.safetensors" in error


def test_create_refuses_a_weight_of_another_rank_or_a_missing_one(tiny, tmp_path):
    out = tiny.export(tmp_path / "tiny")
    api = Api(out / "model.so")
    weights = load_file(str(out / "params.safetensors"))
    name, first = next(iter(weights.items()))
    cases = {
        "longer": ({**weights, name: first.reshape(*first.shape, 1, 1)}, "shape in the file"),
        "shorter": ({**weights, name: first.reshape(-1)}, "shape in the file"),
        "missing": ({k: v for k, v in weights.items() if k != name}, "has no tensor"),
    }
    for case, (content, message) in cases.items():
        path = tmp_path / f"{case}.safetensors"
        save_file(content, str(path))
        handle, error = api.create(path)
        assert not handle, case
        assert message in error and name in error, error
    save_file(weights, str(tmp_path / "same.safetensors"))
    handle, _ = api.create(tmp_path / "same.safetensors")
    assert handle
    api.lib.tessel_model_destroy(handle)


def test_linked_weights_need_no_params_file(tmp_path):
    mod, _ = from_onnx(tiny_onnx(PLAIN))
    model = graph.compile(mod, target=Target.detect(link_params=True))
    out = model.export(tmp_path / "linked")
    assert sorted(os.listdir(out)) == ["model.h", "model.so"]
    exe = build_example(out, tmp_path)
    check_outputs(model, run_example(exe, out, tmp_path), example_input(0, (1, 3, 6, 6)))
    handle, error = Api(out / "model.so").create(tmp_path / "params.safetensors")
    assert not handle and "pass NULL" in error


def hostile_names(tmp_path):
    pwned = tmp_path / "pwned"
    return pwned, {
        "x": 'in "quoted" \\ back\\slash\\',
        "w": f'w"); system("touch {pwned}"); //',
        "b": "b */ ??/ ??= trigraphs ??/\n/* \u2603 nul\x00byte",
        "fw": "f" * 10_000,
        "y": "y\nnew\nlines\r\n\\",
        "z": 'z"); system("touch ' + str(pwned) + '"); ("',
    }


NAMES_PROGRAM = r"""
#include <stdio.h>
#include "model.h"
static void hex(const char* name, int64_t length) {
  for (int64_t j = 0; j < length; ++j) printf("%02x", (unsigned char)name[j]);
  printf("\n");
}
int main(void) {
  for (int i = 0; i < TESSEL_MODEL_NUM_TENSORS; ++i)
    hex(tessel_model_tensors[i].name, tessel_model_tensors[i].name_length);
  for (int i = 0; i < tessel_model_num_inputs(); ++i)
    hex(tessel_model_input_info(i)->name, (int64_t)tessel_model_input_info(i)->name_length);
  for (int i = 0; i < tessel_model_num_outputs(); ++i)
    hex(tessel_model_output_info(i)->name, (int64_t)tessel_model_output_info(i)->name_length);
  return 0;
}
"""


def test_hostile_names_round_trip_and_inject_nothing(tmp_path):
    pwned, names = hostile_names(tmp_path)
    mod, _ = from_onnx(tiny_onnx(names))
    model = graph.compile(mod)
    assert [o.name for o in model.outputs] == [names["y"], names["z"]]
    out = model.export(tmp_path / "hostile")
    # The example (including model.h) builds and runs, and gives Python's results.
    exe = build_example(out, tmp_path)
    check_outputs(model, run_example(exe, out, tmp_path), example_input(0, (1, 3, 6, 6)))
    # Every name comes back byte for byte from the header's table and the library's API.
    (tmp_path / "names.c").write_text(NAMES_PROGRAM)
    link_against_export(tmp_path / "names.c", out, tmp_path / "names", "-Wtrigraphs")
    printed = subprocess.run(
        [str(tmp_path / "names")], check=True, capture_output=True, text=True
    ).stdout.split()
    table = [bytes.fromhex(h).decode() for h in printed]
    weights = [p.name for p in model.aot.of_kind("weight")]
    assert table == [
        names["x"],
        *weights,
        names["y"],
        names["z"],
        names["x"],
        names["y"],
        names["z"],
    ]
    with safe_open(str(out / "params.safetensors"), "np") as f:
        assert sorted(f.keys()) == sorted(weights)
    assert any(w.startswith(names["fw"]) for w in weights)
    assert any(w.startswith(names["w"]) for w in weights)
    # Names are looked up as they are (a name holding NUL cannot be asked for with a C string).
    api = Api(out / "model.so")
    assert api.lib.tessel_model_output_index(names["z"].encode()) == 1
    assert api.lib.tessel_model_input_index(names["x"].encode()) == 0
    assert not pwned.exists()
