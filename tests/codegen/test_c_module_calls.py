"""Calls between the PrimFuncs of one module (tessel.tir.module_calls) in C: each called
function is a static internal function plus an exported wrapper; `main` calls the internal one
with pointers into its arena, and agrees with the interpreter and NumPy."""

import numpy as np
import pytest

import tessel
from tessel.driver import generate_c_source
from tessel.ir.target import Target
from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.script import parse
from tessel.testing.differential import check_same_results
from tessel.tir import interpreter

# A tiny model: y = relu(x @ w), the intermediate in a byte arena main allocates.
TINY_MODEL = """
@I.ir_module
class Module:
    @T.prim_func
    def dense(x: T.Buffer((4, 8), "float32"), w: T.Buffer((8, 8), "float32"),
              out: T.Buffer((4, 8), "float32")):
        for i, j, k in T.grid(4, 8, 8):
            with T.block("dense"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    out[vi, vj] = T.float32(0)
                out[vi, vj] = out[vi, vj] + x[vi, vk] * w[vk, vj]

    @T.prim_func
    def relu(t: T.Buffer((4, 8), "float32"), y: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = T.max(t[vi, vj], T.float32(0))

    @T.prim_func
    def main(x: T.Buffer((4, 8), "float32"), w: T.Buffer((8, 8), "float32"),
             y: T.Buffer((4, 8), "float32")):
        arena = T.allocate([256], "uint8", "global.workspace")
        tmp = T.decl_buffer((4, 8), "float32", data=arena.data, elem_offset=16)
        Module.dense(x.data, w.data, T.address_of(tmp[0, 0]))
        Module.relu(T.address_of(tmp[0, 0]), y.data)
"""

# Three functions, a chain of calls, scalars (one a shape), access_ptr and a plain data pointer.
CHAIN = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        Module.scale_add(A.access_ptr("r"), B.data, 16, T.float32(2))
        Module.scale_add(T.address_of(A[8]), T.address_of(B[8]), 8, T.float32(0.5))

    @T.prim_func
    def scale_add(a: T.handle, b: T.handle, n: T.int32, s: T.float32):
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        Module.fill(B.data, n, s)
        for i in range(n):
            B[i] = B[i] + A[i] * s

    @T.prim_func
    def fill(b: T.handle, n: T.int32, s: T.float32):
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = s
"""

# TVM's own form: a subroutine taking a typed handle and declaring its buffer.
HANDLE_SUBROUTINE = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        Module.subroutine(A.data)

    @T.prim_func(private=True)
    def subroutine(A_data: T.handle("float32")):
        A = T.decl_buffer((4,), "float32", data=A_data)
        for i in range(4):
            A[i] = T.float32(42)
"""

FAILING_CALLEE = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), n: T.int32):
        scratch = T.allocate([64], "float32", "global.workspace")
        S = T.decl_buffer((64,), "float32", data=scratch)
        Module.positive(S.data, n)
        for i in range(4):
            A[i] = T.float32(1)

    @T.prim_func
    def positive(S: T.Buffer((64,), "float32"), n: T.int32):
        assert n > 0, "n must be positive"
        S[0] = T.float32(0)
"""

CONSTANT_CALLEE = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        Module.add_bias(A.data, B.data)

    @T.prim_func
    def add_bias(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        bias = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])
        Bias = T.decl_buffer((4,), "float32", data=bias)
        for i in range(4):
            B[i] = A[i] + Bias[i]
"""


def _random(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_tiny_model_agrees_with_interpreter_and_numpy():
    mod = parse(TINY_MODEL)
    x, w = _random((4, 8), 1), _random((8, 8), 2)
    want = np.maximum(x @ w, 0)
    y_interp = np.zeros((4, 8), "float32")
    interpreter.run(mod, x, w, y_interp, name="main")
    y_c = np.zeros((4, 8), "float32")
    tessel.build(mod)["main"](x, w, y_c)
    np.testing.assert_allclose(y_interp, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_c, want, rtol=1e-5, atol=1e-5)
    check_same_results(mod, mod, name="main")


def test_called_functions_are_static_with_an_exported_wrapper():
    source = generate_c_source(parse(TINY_MODEL))
    header = "static int32_t dense_impl(float* restrict x, float* restrict w, float* restrict out)"
    assert header in source
    assert "TESSEL_EXPORT int32_t dense(" in source
    assert "return dense_impl(x, w, out);" in source
    # main calls the internal functions, and returns their error after freeing its arena
    assert "if (dense_impl((float*)(x), (float*)(w)," in source
    assert source.count("static int32_t relu_impl(") == 2  # declaration and definition


def test_kernels_stay_callable_on_their_own():
    mod = tessel.build(parse(TINY_MODEL))
    t = _random((4, 8), 3)
    y = np.zeros((4, 8), "float32")
    mod["relu"](t, y)
    np.testing.assert_array_equal(y, np.maximum(t, 0))


def test_chain_of_three_functions_with_scalars_and_access_ptr():
    mod = parse(CHAIN)
    check_same_results(mod, mod, name="main")
    a, b = _random(16, 4), np.zeros(16, "float32")
    tessel.build(mod)["main"](a, b)
    want = np.concatenate([2 + 2 * a[:8], 0.5 + 0.5 * a[8:]])
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_tvm_handle_subroutine_is_internal_only():
    mod = parse(HANDLE_SUBROUTINE)
    built = tessel.build(mod)
    assert "subroutine" not in built
    a = np.zeros(4, "float32")
    built["main"](a)
    np.testing.assert_array_equal(a, np.full(4, 42, "float32"))
    check_same_results(mod, mod, name="main")


def test_a_failing_callee_fails_the_caller_with_its_message():
    built = tessel.build(parse(FAILING_CALLEE))
    a = np.zeros(4, "float32")
    with pytest.raises(RuntimeCallError, match="n must be positive"):
        built["main"](a, 0)
    built["main"](a, 3)
    np.testing.assert_array_equal(a, np.ones(4, "float32"))


@pytest.mark.parametrize("link_params", [False, True])
def test_a_callee_reading_module_constants_gets_the_table(link_params):
    mod = parse(CONSTANT_CALLEE)
    a, b = _random(4, 5), np.zeros(4, "float32")
    tessel.build(mod, Target(link_params=link_params))["main"](a, b)
    np.testing.assert_allclose(b, a + np.array([1, 2, 3, 4], "float32"))
    check_same_results(mod, mod, name="main")


def test_a_module_call_inside_a_parallel_loop_is_refused():
    text = TINY_MODEL.replace(
        "        Module.relu(T.address_of(tmp[0, 0]), y.data)",
        "        for p in T.parallel(1):\n            Module.relu(T.address_of(tmp[0, 0]), y.data)",
    )
    with pytest.raises(BuildError, match="parallel loop") as info:
        generate_c_source(parse(text))
    assert info.value.rule == "codegen.call-in-parallel"
