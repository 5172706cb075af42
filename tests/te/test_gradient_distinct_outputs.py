"""te.gradient returns a tensor of its own for every input (never the head, the output or an
input), so that a PrimFunc computing all gradients writes every output buffer."""

import numpy as np
import pytest

from tessel import te
from tessel.testing.topi import BACKENDS, run_tensors


def _sum_of_two():
    A0 = te.placeholder((3, 2), name="A0")
    A1 = te.placeholder((3, 2), name="A1")
    S = te.compute((3, 2), lambda i, j: A0[i, j] + A1[i, j], name="S")
    return A0, A1, S


def _values(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (3, 2)).astype("float32") for _ in range(2)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_of_a_sum_with_the_sum_as_head_are_two_written_tensors(backend):
    A0, A1, S = _sum_of_two()
    g0, g1 = te.gradient(S, [A0, A1], S)
    assert g0 is not g1 and S not in (g0, g1)
    a0, a1 = _values()
    got0, got1 = run_tensors([A0, A1], [g0, g1], [a0, a1], backend)
    # d/dA_k sum(S * head) with head = S (held fixed) is head = a0 + a1, for both inputs.
    np.testing.assert_allclose(got0, a0 + a1, rtol=1e-6)
    np.testing.assert_allclose(got1, a0 + a1, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_of_a_sum_with_the_default_head_are_ones(backend):
    A0, A1, S = _sum_of_two()
    grads = te.gradient(S, [A0, A1])
    assert grads[0] is not grads[1]
    for got in run_tensors([A0, A1], grads, _values(), backend):
        np.testing.assert_array_equal(got, np.ones((3, 2), "float32"))


def test_gradients_of_a_sum_agree_with_finite_differences():
    A0, A1, S = _sum_of_two()
    T = te.compute((3, 2), lambda i, j: S[i, j] * A0[i, j], name="T")
    head = te.placeholder((3, 2), name="head")
    grads = te.gradient(T, [A0, A1], head)
    a0, a1 = _values(1)
    h = np.random.default_rng(2).uniform(-1, 1, (3, 2)).astype("float32")
    got0, got1 = run_tensors([A0, A1, head], grads, [a0, a1, h], "c")

    def loss(x0, x1):
        return float(((x0.astype("float64") + x1) * x0 * h).sum())

    eps = 1e-3
    for got, position in ((got0, 0), (got1, 1)):
        numeric = np.zeros((3, 2))
        for index in np.ndindex(3, 2):
            plus, minus = (
                [a0.astype("float64"), a1.astype("float64")],
                [a0.astype("float64"), a1.astype("float64")],
            )
            plus[position] = plus[position].copy()
            minus[position] = minus[position].copy()
            plus[position][index] += eps
            minus[position][index] -= eps
            numeric[index] = (loss(*plus) - loss(*minus)) / (2 * eps)
        np.testing.assert_allclose(got, numeric, rtol=1e-4, atol=1e-5)


def test_gradient_of_the_output_itself_is_a_copy_of_the_head():
    A0, A1, S = _sum_of_two()
    head = te.compute((3, 2), lambda i, j: A0[i, j] * 2.0, name="head")
    (g_s,) = te.gradient(S, [S], head)
    assert g_s is not head and g_s is not S
    a0, a1 = _values()
    got_head, got_s = run_tensors([A0, A1], [head, g_s], [a0, a1], "c")
    np.testing.assert_allclose(got_s, a0 * 2.0, rtol=1e-6)
    np.testing.assert_allclose(got_head, a0 * 2.0, rtol=1e-6)


def test_an_input_listed_twice_gets_two_gradient_tensors():
    A0, A1, S = _sum_of_two()
    head = te.compute((3, 2), lambda i, j: A1[i, j] - 1.0, name="head")
    first, second = te.gradient(S, [A0, A0], head)
    assert first is not second
    a0, a1 = _values()
    for got in run_tensors([A0, A1], [first, second], [a0, a1], "c"):
        np.testing.assert_allclose(got, a1 - 1.0, rtol=1e-6)
