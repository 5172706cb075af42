"""ExtractConstants: constant data moves into the module's "constants", deduplicated (RFC 22)."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T
from tessel.support.errors import InternalError
from tessel.testing import check_same_results
from tessel.tir import interpreter
from tessel.tir.stmt import AllocateConst
from tessel.transform import ExtractConstants, lower
from tessel.transform.postconditions import check_postcondition


def _consts(func):
    return [n for n in post_order(func.body) if isinstance(n, AllocateConst)]


@T.prim_func
def scale(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    W = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float32", [4])
    for i in range(4):
        B[i] = A[i] * W[i]


@T.prim_func
def shift(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    W = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float32", [4])
    for i in range(4):
        B[i] = A[i] + W[i]


@T.prim_func
def offset(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    W = T.allocate_const([1.0, 1.0, 1.0, 1.0], "float32", [4])
    V = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float64", [4])  # same values, other dtype
    for i in range(4):
        B[i] = A[i] + W[i] + T.Cast("float32", V[i])


def test_data_becomes_an_index_into_the_module_constants():
    before = IRModule.from_func(scale)
    after = ExtractConstants()(before)

    @T.prim_func
    def expected(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        W = T.allocate_const(None, "float32", [4], irmod_storage_idx=0)
        for i in range(4):
            B[i] = A[i] * W[i]

    assert_structural_equal(after["scale"], with_changes(expected, attrs=after["scale"].attrs))
    (constant,) = after.attrs["constants"]
    np.testing.assert_array_equal(constant, np.array([0.5, -1.0, 2.0, 3.0], "float32"))
    assert constant.dtype == np.float32
    assert not constant.flags.writeable
    a = np.arange(4, dtype="float32")
    for mod in (before, after):  # the interpreter reads the module's constants
        b = np.zeros(4, "float32")
        interpreter.run(mod, a, b, name="scale")
        np.testing.assert_array_equal(b, a * np.array([0.5, -1.0, 2.0, 3.0], "float32"))


def test_two_functions_with_the_same_array_share_one_copy():
    mod = IRModule.from_dict({"scale": scale, "shift": shift})
    after = ExtractConstants()(mod)
    assert len(after.attrs["constants"]) == 1
    (w_scale,), (w_shift,) = _consts(after["scale"]), _consts(after["shift"])
    assert w_scale.irmod_storage_idx == w_shift.irmod_storage_idx == 0
    assert w_scale.data is None
    assert w_shift.data is None


def test_different_arrays_stay_separate_and_equal_ones_are_shared():
    mod = IRModule.from_dict({"scale": scale, "offset": offset, "shift": shift})
    after = ExtractConstants()(mod)
    constants = after.attrs["constants"]
    assert [(c.dtype.name, c.tolist()) for c in constants] == [
        ("float32", [0.5, -1.0, 2.0, 3.0]),
        ("float32", [1.0, 1.0, 1.0, 1.0]),
        ("float64", [0.5, -1.0, 2.0, 3.0]),
    ]
    assert [c.irmod_storage_idx for c in _consts(after["offset"])] == [2, 1]  # post order: V, W
    assert _consts(after["shift"])[0].irmod_storage_idx == 0
    a = np.arange(4, dtype="float32")
    for name in ("scale", "offset", "shift"):
        want, got = np.zeros(4, "float32"), np.zeros(4, "float32")
        interpreter.run(mod, a, want, name=name)
        interpreter.run(after, a, got, name=name)
        np.testing.assert_array_equal(got, want)


def test_same_bytes_in_another_shape_is_another_constant():
    @T.prim_func
    def grid(B: T.Buffer((2, 2), "float32")):
        W = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float32", [2, 2])
        for i, j in T.grid(2, 2):
            B[i, j] = W[i, j]

    after = ExtractConstants()(IRModule.from_dict({"scale": scale, "grid": grid}))
    assert [c.shape for c in after.attrs["constants"]] == [(4,), (2, 2)]


def test_an_allocate_const_with_a_storage_index_is_left_alone():
    @T.prim_func
    def weights(out: T.Buffer((2, 3), "float32")):
        w = T.allocate_const(None, "float32", [2, 3], irmod_storage_idx=0)
        k = T.allocate_const([6.0, 5.0, 4.0, 3.0, 2.0, 1.0], "float32", [2, 3])
        for i, j in T.grid(2, 3):
            out[i, j] = w[i, j] + k[i, j]

    existing = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32")
    mod = IRModule.from_func(weights).with_attr("constants", (existing,))
    after = ExtractConstants()(mod)
    k, w = _consts(after["weights"])  # post order: the inner one first
    assert w.irmod_storage_idx == 0
    assert k.irmod_storage_idx == 1
    assert after.attrs["constants"][0] is existing
    out = np.zeros((2, 3), "float32")
    interpreter.run(after, out)
    np.testing.assert_array_equal(out, np.full((2, 3), 7, "float32"))


def test_a_module_without_data_comes_back_unchanged():
    mod = ExtractConstants()(IRModule.from_func(scale))
    assert ExtractConstants()(mod) is mod


def test_the_pipeline_extracts_constants_and_results_agree():
    lowered = lower(scale, verify=True)
    assert all(n.data is None for n in _consts(lowered["scale"]))
    assert len(lowered.attrs["constants"]) == 1
    check_same_results(scale, scale)  # interpreter vs the C build of the lowered function


def test_postcondition_names_a_constant_that_still_carries_data():
    with pytest.raises(InternalError, match="extract_constants.*`W` still carries its data"):
        check_postcondition(IRModule.from_func(scale), "extract_constants")


def test_postcondition_refuses_a_storage_index_past_the_module_constants():
    extracted = ExtractConstants()(IRModule.from_func(scale))
    truncated = extracted.with_attr("constants", ())
    with pytest.raises(InternalError, match=r"refers to entry 0 of \"constants\", which has 0"):
        check_postcondition(truncated, "extract_constants")


def test_check_same_results_runs_modules_whose_constants_are_extracted():
    before = IRModule.from_dict({"scale": scale, "offset": offset})
    extracted = ExtractConstants()(before)
    assert {c.irmod_storage_idx for c in _consts(extracted["offset"])} == {1, 2}
    for name in ("scale", "offset"):  # both backends find the module's constants
        check_same_results(before, extracted, name=name)
