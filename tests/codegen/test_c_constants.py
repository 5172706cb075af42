"""Module constants in C (RFC 22): embedded once with link_params, else handed over at load."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.driver import build, generate_c_source
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.runtime import BuildError, ConstantSpec, Module, compile_source
from tessel.script import tir as T
from tessel.tir import interpreter
from tessel.transform import lower

LINKED, UNLINKED = Target(link_params=True), Target(link_params=False)
WEIGHTS = np.array([0.5, -1.25, 3.0, 1e-7, 2.5, 0.1, -0.0, 7.0], "float32")
RNG = np.random.default_rng(1)


@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    W = T.allocate_const([0.5, -1.25, 3.0, 1e-7, 2.5, 0.1, -0.0, 7.0], "float32", [8])
    for i in range(8):
        B[i] = A[i] * W[i]


@T.prim_func
def shift(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    W = T.allocate_const([0.5, -1.25, 3.0, 1e-7, 2.5, 0.1, -0.0, 7.0], "float32", [8])
    for i in range(8):
        B[i] = A[i] + W[i]


@T.prim_func
def table(out: T.Buffer((2, 3), "int32")):
    t = T.allocate_const([1, -2, 3, 4, 5, -6], "int32", [2, 3])
    for i, j in T.grid(2, 3):
        out[i, j] = t[i, j] * 2 + i


@T.prim_func
def indexed(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    W = T.allocate_const(None, "float32", [8], irmod_storage_idx=0)
    for i in range(8):
        B[i] = A[i] * W[i]


def _run(function, *args):
    """Call a compiled function on copies of `args`; return the copies after the call."""
    copies = [np.array(a, copy=True) for a in args]
    function(*copies)
    return copies


@pytest.mark.parametrize("target", [LINKED, UNLINKED], ids=["linked", "unlinked"])
def test_linked_and_unlinked_builds_agree_with_the_interpreter_and_numpy(target):
    a = RNG.standard_normal(8).astype("float32")
    want = np.zeros(8, "float32")
    interpreter.run(scale, a, want)
    np.testing.assert_array_equal(want, a * WEIGHTS)
    (_, got) = _run(build(scale, target), a, np.zeros(8, "float32"))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", [LINKED, UNLINKED], ids=["linked", "unlinked"])
def test_integer_two_dimensional_constant(target):
    (got,) = _run(build(table, target), np.zeros((2, 3), "int32"))
    want = np.zeros((2, 3), "int32")
    interpreter.run(table, want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.array([[2, -4, 6], [9, 11, -11]], "int32"))


def test_linked_build_embeds_a_shared_constant_once():
    mod = IRModule.from_dict({"scale": scale, "shift": shift})
    source = generate_c_source(mod, LINKED)
    assert source.count("extern const unsigned char tessel_constant_") == 1
    assert source.count("= (const float*)tessel_constant_0;") == 2  # both point at one copy
    a = RNG.standard_normal(8).astype("float32")
    for target in (LINKED, UNLINKED):
        kernel = build(mod, target)
        for name, want in (("scale", a * WEIGHTS), ("shift", a + WEIGHTS)):
            (_, got) = _run(kernel[name], a, np.zeros(8, "float32"))
            np.testing.assert_array_equal(got, want)


def test_unlinked_build_holds_no_constant_data_and_takes_a_table():
    source = generate_c_source(scale, UNLINKED)
    assert "tessel_constant_" not in source
    assert "0x1.4000000000000p+1f" not in source  # 2.5, one of the weights
    assert "const void* const* constants" in source
    kernel = build(scale, UNLINKED)
    assert kernel["scale"].signature.constants


def test_unlinked_modules_sharing_one_library_keep_their_own_constants():
    # The same code with other constants compiles to the same cached library; each Module
    # must still read its own constants.
    first = IRModule.from_func(indexed).with_attr("constants", (WEIGHTS,))
    second = IRModule.from_func(indexed).with_attr("constants", (WEIGHTS * 2,))
    kernel_1, kernel_2 = build(first, UNLINKED), build(second, UNLINKED)
    assert kernel_1.library_path == kernel_2.library_path
    a = RNG.standard_normal(8).astype("float32")
    for kernel, mod in ((kernel_1, first), (kernel_2, second)):
        want = np.zeros(8, "float32")
        interpreter.run(mod, a, want)
        (_, got) = _run(kernel, a, np.zeros(8, "float32"))
        np.testing.assert_array_equal(got, want)
    (_, again) = _run(kernel_1, a, np.zeros(8, "float32"))
    np.testing.assert_array_equal(again, a * WEIGHTS)


def test_a_module_constant_of_the_wrong_type_is_a_build_error():
    mod = IRModule.from_func(indexed).with_attr("constants", (WEIGHTS.astype("float64"),))
    with pytest.raises(BuildError, match="module constant 0"):
        build(mod, LINKED)


def test_the_runtime_checks_the_constants_it_is_handed():
    mod = lower(IRModule.from_func(indexed).with_attr("constants", (WEIGHTS,)))
    c_source = generate(mod, UNLINKED)
    assert c_source.constants == (ConstantSpec(0, "float32", (8,)),)
    library, specs = compile_source(c_source.source), c_source.constants
    with pytest.raises(BuildError, match="takes 1 module constants, but 0"):
        Module(library, c_source.entries, constant_specs=specs)
    with pytest.raises(BuildError, match=r"should be \[8\] of float32, got \[4\] of float32"):
        Module(library, c_source.entries, constants=(WEIGHTS[:4],), constant_specs=specs)
    with pytest.raises(BuildError, match="no constant specs"):
        Module(library, c_source.entries)
    weights = WEIGHTS.copy()
    kernel = Module(library, c_source.entries, constants=(weights,), constant_specs=specs)
    weights[:] = 0  # the Module keeps its own copy
    a = np.ones(8, "float32")
    b = np.zeros(8, "float32")
    kernel(a, b)
    np.testing.assert_array_equal(b, WEIGHTS)
