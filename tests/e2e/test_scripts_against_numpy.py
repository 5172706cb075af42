"""Scripts of the acceptance list run in the reference interpreter and as compiled C, vs NumPy.

The scripts are the corpus's `e2e_*.py` files, so the round-trip test prints the same programs.
"""

from pathlib import Path

import numpy as np
import pytest

import tessel
from tessel.script import parse
from tessel.tir import interpreter

CORPUS = Path(__file__).parent.parent / "script" / "corpus"


def corpus_script(name: str):
    """The PrimFunc of `tests/script/corpus/e2e_<name>.py`."""
    path = CORPUS / f"e2e_{name}.py"
    return parse(path.read_text(), str(path))


def run_both(func, *args):
    """Run `func` in the interpreter and as C on copies of `args`; return both argument lists."""
    interp_args = [a.copy() for a in args]
    native_args = [a.copy() for a in args]
    interpreter.run(func, *interp_args)
    tessel.build(func)(*native_args)
    return interp_args, native_args


def _rand(rng, shape, dtype="float32"):
    if dtype == "int32":
        return rng.integers(-8, 8, shape).astype("int32")
    return rng.uniform(-1, 1, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matmul_matches_numpy(dtype):
    func = corpus_script(f"matmul_{dtype}")
    rng = np.random.default_rng(0)
    a_shape, b_shape = (tuple(int(e.value) for e in b.shape) for b in func.param_buffers()[:2])
    a, b = _rand(rng, a_shape, dtype), _rand(rng, b_shape, dtype)
    c = np.zeros((a_shape[0], b_shape[1]), dtype)
    for result in run_both(func, a, b, c):
        np.testing.assert_allclose(result[2], a @ b, rtol=1e-5, atol=1e-5)


def test_conv2d_nchw_matches_numpy():
    rng = np.random.default_rng(1)
    x, w = _rand(rng, (1, 3, 10, 10)), _rand(rng, (4, 3, 3, 3))
    expected = np.zeros((1, 4, 8, 8), "float32")
    for ky in range(3):
        for kx in range(3):
            patch = x[:, :, ky : ky + 8, kx : kx + 8]
            expected += np.einsum("nchw,fc->nfhw", patch, w[:, :, ky, kx])
    for result in run_both(corpus_script("conv2d_nchw"), x, w, np.zeros((1, 4, 8, 8), "float32")):
        np.testing.assert_allclose(result[2], expected, rtol=1e-5, atol=1e-5)


def test_softmax_matches_numpy():
    a = _rand(np.random.default_rng(2), (6, 20)) * 4
    e = np.exp(a - a.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    for result in run_both(corpus_script("softmax"), a, np.zeros_like(a)):
        np.testing.assert_allclose(result[1], expected, rtol=1e-5, atol=1e-6)


def test_layer_norm_two_pass_reduction_matches_numpy():
    a = _rand(np.random.default_rng(3), (4, 32))
    mean = a.mean(axis=1, keepdims=True)
    expected = (a - mean) / np.sqrt(((a - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    for result in run_both(corpus_script("layer_norm"), a, np.zeros_like(a)):
        np.testing.assert_allclose(result[1], expected, rtol=1e-4, atol=1e-5)


def test_elementwise_chain_with_broadcast_matches_numpy():
    rng = np.random.default_rng(4)
    a, bias = _rand(rng, (8, 16)), _rand(rng, (16,))
    expected = np.maximum(a + bias, 0) * 2 + 0.5
    for result in run_both(corpus_script("elementwise_broadcast"), a, bias, np.zeros_like(a)):
        np.testing.assert_allclose(result[2], expected, rtol=1e-6)
