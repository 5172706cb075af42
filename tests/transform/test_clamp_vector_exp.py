"""ClampVectorExp: a vector float32/float64 exp becomes `tessel.exp_flush_below(x, floor)`, which
the interpreter and the C backend run alike (0 at and below the floor, NaN and +-inf as exp);
scalar and float16 exp, and IR without exp, are left alone (the same object back)."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.codegen import CodegenError, generate
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.ir.transform import PrintAfterAll
from tessel.runtime.compiler import compile_source
from tessel.runtime.module import Module
from tessel.script import tir as T
from tessel.tir import builtin, interpreter
from tessel.transform import ClampVectorExp, lower

N = 16
FLOORS = {"float32": -87.0, "float64": -708.0}


def _vector_exp(dtype: str):
    @T.prim_func
    def vector_exp(A: T.Buffer((N,), dtype), B: T.Buffer((N,), dtype)):
        B[T.Ramp(0, 1, N)] = T.exp(A[T.Ramp(0, 1, N)])

    return vector_exp


def _clamp(func):
    return ClampVectorExp()(IRModule.from_func(func))[func.name]


def _compiled_as_is(func) -> Module:
    """The C backend's code for `func` as written (lowering would run the pass itself)."""
    source = generate(IRModule.from_func(func))
    return Module(compile_source(source.source), list(source.entries), source.source)


def _inputs(dtype: str) -> np.ndarray:
    """Random values around the floor, the floor itself, just above it, NaN and +-inf."""
    floor = FLOORS[dtype]
    special = [floor, floor - 0.5, floor + 0.5, -1e4, np.nan, np.inf, -np.inf, 0.0]
    rng = np.random.default_rng(5)
    values = np.concatenate([special, rng.uniform(floor - 20, 5, N - len(special))])
    return values.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_vector_exp_becomes_exp_flush_below_at_its_floor(dtype):
    before = _vector_exp(dtype)
    store = before.body
    load = store.value.args[0]
    floor = E.FloatImm(load.dtype.element, FLOORS[dtype])
    flushed = E.Call(store.value.dtype, builtin.exp_flush_below_op, (load, floor))
    expected = with_changes(before, body=with_changes(store, value=flushed))
    assert_structural_equal(_clamp(before), expected)


def test_scalar_exp_float16_exp_and_other_math_are_left_alone():
    @T.prim_func
    def untouched(
        A: T.Buffer((N,), "float32"),
        H: T.Buffer((N,), "float16"),
        B: T.Buffer((N,), "float32"),
        C: T.Buffer((N,), "float16"),
    ):
        B[0] = T.exp(A[0])
        B[T.Ramp(0, 1, N)] = T.log(A[T.Ramp(0, 1, N)])
        C[T.Ramp(0, 1, N)] = T.exp(H[T.Ramp(0, 1, N)])

    mod = IRModule.from_func(untouched)
    assert ClampVectorExp()(mod) is mod


def test_running_the_pass_twice_changes_nothing_more():
    once = IRModule.from_func(_clamp(_vector_exp("float32")))
    assert ClampVectorExp()(once) is once


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_flush_below_gives_zero_at_and_under_the_floor_and_keeps_nan_and_inf(dtype):
    before, after = _vector_exp(dtype), _clamp(_vector_exp(dtype))
    a = _inputs(dtype)
    results = {}
    for label, func, run in (
        ("interpreter before", before, interpreter.run),
        ("interpreter after", after, interpreter.run),
        ("C before", before, lambda f, *args: _compiled_as_is(f)(*args)),
        ("C after", after, lambda f, *args: _compiled_as_is(f)(*args)),
    ):
        b = np.full(N, 7, dtype)
        run(func, a.copy(), b)
        results[label] = b
    floor = FLOORS[dtype]
    with np.errstate(all="ignore"):
        exact = np.exp(a)
    flushed = np.where(np.maximum(a, floor) == floor, 0, exact).astype(dtype)
    # After the pass, the interpreter and C agree exactly on the flushed and special lanes.
    special = (a <= floor) | ~np.isfinite(a)
    for label in ("interpreter after", "C after"):
        np.testing.assert_array_equal(results[label][special], flushed[special], err_msg=label)
        np.testing.assert_allclose(results[label], flushed, rtol=1e-6, atol=0, err_msg=label)
    assert (results["C after"][a <= floor] == 0).all()  # never subnormal
    # Before the pass, exp is exp: the two differ only by what lies under e**floor.
    tiny = float(np.exp(np.array(floor, dtype))) * 1.01
    for label in ("interpreter before", "C before"):
        np.testing.assert_allclose(results[label], exact, rtol=1e-6, atol=0, err_msg=label)
        np.testing.assert_allclose(results[label], results["C after"], rtol=1e-6, atol=tiny)


def test_the_c_of_the_clamped_exp_is_the_simd_loop_with_the_prelude_floor():
    text = generate(IRModule.from_func(_clamp(_vector_exp("float32")))).source
    body = text[text.index(" vector_exp(") :]
    assert "tessel_exp_floor_f32" in body and '_Pragma("omp simd")' in body
    plain = generate(IRModule.from_func(_vector_exp("float32"))).source
    assert "tessel_exp_floor_f32" not in plain[plain.index(" vector_exp(") :]


def test_the_prelude_floors_are_the_pass_floors():
    prelude = generate(IRModule.from_func(_vector_exp("float32"))).source
    assert f"float tessel_exp_floor_f32 = {builtin.EXP_FLOORS[32]}f;" in prelude
    assert f"double tessel_exp_floor_f64 = {builtin.EXP_FLOORS[64]};" in prelude


def test_lowering_shows_the_pass_by_name_and_its_intrinsic_after_it():
    printed = []

    @T.prim_func
    def vectorized(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32")):
        for i in T.vectorized(N):
            with T.block("B"):
                vi = T.axis.spatial(N, i)
                B[vi] = T.exp(A[vi])

    lowered = lower(vectorized, instruments=[PrintAfterAll(write=printed.append)])
    text = next(p for p in printed if p.startswith("# after clamp_vector_exp"))
    assert '"tessel.exp_flush_below"' in text and "T.float32(-87.0)" in text
    calls = [n for n in post_order(lowered["vectorized"].body) if isinstance(n, E.Call)]
    assert [c.op.name for c in calls] == ["tessel.exp_flush_below"]


def test_a_floor_the_prelude_lacks_is_a_codegen_error():
    func = _vector_exp("float32")
    odd = with_changes(
        func,
        body=with_changes(func.body, value=builtin.exp_flush_below(func.body.value.args[0], -50.0)),
    )
    with pytest.raises(CodegenError, match="floor") as info:
        generate(IRModule.from_func(odd))
    assert info.value.rule == "codegen.exp-floor"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_scalar_exp_flush_below_runs_alike_in_the_interpreter_and_c(dtype):
    @T.prim_func
    def scalar_exp(A: T.Buffer((N,), dtype), B: T.Buffer((N,), dtype)):
        for i in range(N):
            B[i] = T.exp(A[i])

    loop = scalar_exp.body
    store = loop.body
    flushed = builtin.exp_flush_below(store.value.args[0], FLOORS[dtype])
    body = with_changes(loop, body=with_changes(store, value=flushed))
    func = with_changes(scalar_exp, body=body)
    a = _inputs(dtype)
    b_interpreted, b_compiled = np.zeros(N, dtype), np.zeros(N, dtype)
    interpreter.run(func, a.copy(), b_interpreted)
    _compiled_as_is(func)(a.copy(), b_compiled)
    special = (a <= FLOORS[dtype]) | ~np.isfinite(a)
    np.testing.assert_array_equal(b_compiled[special], b_interpreted[special])
    np.testing.assert_allclose(b_compiled, b_interpreted, rtol=1e-6, atol=0)
    assert (b_compiled[a <= FLOORS[dtype]] == 0).all()
