"""A reduction over an empty domain (a reduction axis of extent 0) is its initial value: the
PrimFunc writes it, in the interpreter and in C, instead of leaving the output unwritten."""

from __future__ import annotations

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.tir import interpreter


def _matmul_with_empty_inner_dimension():
    a = te.placeholder((3, 0), name="A")
    b = te.placeholder((0, 4), name="B")
    k = te.reduce_axis((0, 0), "k")
    c = te.compute((3, 4), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def _max_over_an_empty_axis():
    a = te.placeholder((3, 0), name="A")
    k = te.reduce_axis((0, 0), "k")
    c = te.compute((3,), lambda i: te.max(a[i, k], axis=k), name="C")
    return te.create_prim_func([a, c])


@pytest.mark.parametrize("run", ["interpreter", "c"])
def test_sum_over_an_empty_axis_writes_zero(run):
    func = _matmul_with_empty_inner_dimension()
    out = np.full((3, 4), 7, np.float32)  # whatever was there must be overwritten
    args = (np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), out)
    interpreter.run(func, *args) if run == "interpreter" else tessel.build(func)(*args)
    np.testing.assert_array_equal(out, np.zeros((3, 4), np.float32))


def test_max_over_an_empty_axis_writes_its_identity_in_c():
    out = np.zeros(3, np.float32)
    tessel.build(_max_over_an_empty_axis())(np.zeros((3, 0), np.float32), out)
    np.testing.assert_array_equal(out, np.full(3, -np.inf, np.float32))


def test_an_empty_reduction_has_no_reduction_loops():
    func = _matmul_with_empty_inner_dimension()
    text = str(func)
    assert "T.grid(3, 4)" in text
    assert "T.init()" not in text
