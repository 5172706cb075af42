"""`CC=clang` builds what gcc builds: whole models (convolution, dense, softmax, attention, with
OpenMP and Tessel's vector types) and half-precision kernels agree with the reference when clang
compiles them. Skipped where clang is not installed (Debian: `apt-get install clang libomp-dev`)."""

import shutil

import pytest
from graph_models import INPUTS, MODELS, assert_close, load, random_inputs, random_weights

import tessel.graph as graph
from tessel.graph import evaluate
from tessel.runtime.compiler import compiler_flags, find_compiler
from tessel.testing.differential import check_same_results
from tessel.testing.ir_programs import matmul

pytestmark = pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed")


@pytest.fixture
def clang(monkeypatch):
    monkeypatch.setenv("CC", "clang")
    assert find_compiler() == ("clang",)


def test_clang_gets_the_flags_that_keep_results_equal_to_the_interpreter(clang):
    flags = compiler_flags(find_compiler())
    assert "-ffp-contract=off" in flags  # clang would fuse a * b + c into one fma by default
    assert "-fno-tree-loop-if-convert" not in flags  # gcc's own flag: probed, and dropped


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_built_by_clang_match_the_evaluator(name, clang):
    mod = load(name)
    weights = random_weights(mod, INPUTS[name])
    model = graph.compile(mod, params=weights, threads=2)
    for seed in (1, 7):
        inputs = random_inputs(mod, INPUTS[name], seed=seed)
        assert_close(model(*inputs), evaluate(mod, *inputs, params=weights))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_matmul_built_by_clang_matches_the_interpreter(dtype, clang):
    func = matmul(n=37, dtype=dtype)
    tolerance = 1e-2 if dtype == "float16" else 1e-5
    check_same_results(func, func, rtol=tolerance, atol=tolerance)
