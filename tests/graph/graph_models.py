"""Small models in the Relay text format, with random weights, for the lowering and executor
tests: an MLP, a CNN (conv-bn-relu-pool-dense) and an attention block."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tessel.graph import InferType, TensorType, parse
from tessel.ir.module import IRModule
from tessel.schedule.rules.default import gemm_columns, host_target
from tessel.schedule.rules.gemm import SHORT_REDUCTION
from tessel.schedule.rules.plan import vector_lanes

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 784), float32], %w1: Tensor[(512, 784), float32], %b1: Tensor[(512), float32],
          %w2: Tensor[(512, 512), float32], %b2: Tensor[(512), float32],
          %w3: Tensor[(10, 512), float32], %b3: Tensor[(10), float32]) {
  %0 = nn.dense(%x, %w1, units=512);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.dense(%2, %w2, units=512);
  %4 = nn.bias_add(%3, %b2);
  %5 = nn.relu(%4);
  %6 = nn.dense(%5, %w3, units=10);
  nn.bias_add(%6, %b3)
}
"""

CNN = """#[version = "0.0.5"]
def @main(%data: Tensor[(2, 3, 16, 16), float32], %weight: Tensor[(8, 3, 3, 3), float32],
          %gamma: Tensor[(8), float32], %beta: Tensor[(8), float32], %mean: Tensor[(8), float32],
          %var: Tensor[(8), float32], %dense_w: Tensor[(10, 512), float32], %dense_b: Tensor[(10), float32]) {
  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var, epsilon=1e-05f);
  %2 = nn.relu(%1.0);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.batch_flatten(%3);
  %5 = nn.dense(%4, %dense_w, units=10);
  nn.bias_add(%5, %dense_b)
}
"""

ATTENTION = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8, 16), float32], %wq: Tensor[(2, 16, 16), float32],
          %wk: Tensor[(2, 16, 16), float32], %wv: Tensor[(2, 16, 16), float32],
          %gamma: Tensor[(16), float32], %beta: Tensor[(16), float32]) {
  %0 = nn.batch_matmul(%x, %wq);
  %1 = nn.batch_matmul(%x, %wk);
  %2 = nn.batch_matmul(%x, %wv);
  %3 = nn.batch_matmul(%0, %1);
  %4 = multiply(%3, 0.25f);
  %5 = nn.softmax(%4, axis=-1);
  %6 = transpose(%2, axes=[0, 2, 1]);
  %7 = nn.batch_matmul(%5, %6);
  %8 = add(%7, %x);
  nn.layer_norm(%8, %gamma, %beta, axis=-1)
}
"""

MODELS = {"mlp": MLP, "cnn": CNN, "attention": ATTENTION}
INPUTS = {"mlp": ["x"], "cnn": ["data"], "attention": ["x"]}


def load(name: str) -> IRModule:
    """The model `name`, typed."""
    return InferType()(parse(MODELS[name]))


def random_weights(mod: IRModule, inputs: list[str], seed: int = 0) -> dict[str, np.ndarray]:
    """Random values for every parameter of main not in `inputs` (variances positive)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for param in mod["main"].params:
        ty = param.type_annotation
        assert isinstance(ty, TensorType)
        if param.name_hint in inputs:
            continue
        if param.name_hint == "var":
            weights[param.name_hint] = rng.uniform(0.5, 1.5, ty.shape).astype(ty.dtype)
        else:
            scale = 1.0 / np.sqrt(ty.shape[-1]) if len(ty.shape) > 1 else 1.0
            weights[param.name_hint] = (rng.normal(size=ty.shape) * scale).astype(ty.dtype)
    return weights


def random_inputs(mod: IRModule, inputs: list[str], seed: int = 1) -> list[np.ndarray]:
    """Random values for the parameters of main named in `inputs`, in order."""
    rng = np.random.default_rng(seed)
    by_name = {p.name_hint: p.type_annotation for p in mod["main"].params}
    return [rng.normal(size=by_name[n].shape).astype(by_name[n].dtype) for n in inputs]


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-4) -> None:
    """Equal to `rtol` relative to the largest magnitude of `expected` (values near zero are
    compared against the scale of the tensor, not their own)."""
    expected = np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(
        actual, expected, rtol=rtol, atol=rtol * float(np.abs(expected).max())
    )


# The columns of the GEMM rule's tile (and of a packed dense weight) on this machine, and one
# vector of float32 (the columns of a short reduction's or a narrow output's tile).
COLUMNS = gemm_columns(host_target())
LANES = vector_lanes(host_target(), 32)


def exported_weights(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The MLP's weights as a compiled model holds them: LayoutRewrite packs each dense weight
    W[j, k] into `<name>_packed`, laid out [j // c, k, j % c] and zero-padded, c the GEMM
    rule's columns on this machine (COLUMNS; one vector, LANES, for a short reduction or at
    most LANES outputs)."""
    held = {}
    for name, value in weights.items():
        if value.ndim != 2:
            held[name] = value
            continue
        n, k = value.shape
        columns = COLUMNS if n > LANES and k >= SHORT_REDUCTION else LANES
        padded = np.zeros((-(-n // columns) * columns, k), value.dtype)
        padded[:n] = value
        held[f"{name}_packed"] = padded.reshape(-1, columns, k).transpose(0, 2, 1).copy()
    return held


def c_compiler() -> str:
    """The C compiler that builds programs against an export: $CC, cc, gcc or clang; the test
    is skipped without one."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.skip("no C compiler")


def link_against_export(source: Path, out: Path, exe: Path, *flags: str) -> Path:
    """`source` compiled with warnings as errors (and `flags`) and linked against the model.so
    exported into `out`; the executable's path."""
    subprocess.run(
        [c_compiler(), "-std=c11", "-Wall", "-Werror", *flags, str(source), f"-I{out}",
         str(out / "model.so"), f"-Wl,-rpath,{out}", "-lm", "-o", str(exe)],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    return exe


def run_without_python(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a C program against an export with no PYTHON* variables in its environment, so it
    owes nothing to this interpreter; its captured output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env)
