"""Integer division in compiled C: a zero divisor, or the minimum divided by -1, raises an error
(as in the interpreter) instead of killing the process with SIGFPE; safe constants stay plain."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.ir import builders as B
from tessel.ir.expr import Div, FloorDiv, FloorMod, Mod, Var
from tessel.runtime import RuntimeCallError
from tessel.testing.ir_programs import TRUE, loops, prim_func, seq, store
from tessel.tir import builtin, interpreter
from tessel.tir.buffer import decl_buffer
from tessel.tir.interpreter import InterpreterError
from tessel.tir.stmt import Allocate, DeclBuffer, Evaluate, ForKind, IfThenElse, LetStmt, While

OPS = [Div, Mod, FloorDiv, FloorMod]


def _elementwise(node_cls, dtype, n=4, kind=ForKind.SERIAL):
    a_buf, b_buf, c_buf = (decl_buffer((n,), dtype, name) for name in "ABC")
    body = loops((n,), lambda i: store(c_buf, (i,), node_cls(a_buf[i], b_buf[i])), kind)
    return prim_func("divide", (a_buf, b_buf, c_buf), body)


def _both_fail(func, args, match):
    """Run `func` in the interpreter and compiled; both must refuse with a message matching."""
    with pytest.raises(InterpreterError, match=match):
        interpreter.run(func, *[np.array(a, copy=True) for a in args])
    with pytest.raises(RuntimeCallError, match=match) as err:
        build(func)(*args)
    return err.value


@pytest.mark.parametrize("node_cls", OPS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_division_by_zero_raises_in_the_interpreter_and_in_c(node_cls, dtype):
    func = _elementwise(node_cls, dtype)
    a, b = np.array([7, 8, 9, 10], dtype), np.array([2, 3, 0, 1], dtype)
    c = np.full(4, 5, dtype)
    err = _both_fail(func, (a, b, c), "division by zero")
    assert "in the store to `C`" in err.c_message
    assert c[2] == 5  # the failed store did not happen


@pytest.mark.parametrize("node_cls", OPS)
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_minimum_divided_by_minus_one_raises_in_the_interpreter_and_in_c(node_cls, dtype):
    func = _elementwise(node_cls, dtype)
    low = np.iinfo(dtype).min
    a, b = np.array([7, low, low, 1], dtype), np.array([-1, 2, -1, 1], dtype)
    with pytest.raises(InterpreterError, match="overflow"):
        interpreter.run(func, a, b, np.zeros(4, dtype))
    with pytest.raises(RuntimeCallError, match="overflow"):
        build(func)(a, b, np.zeros(4, dtype))


@pytest.mark.parametrize("node_cls", OPS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "uint64"])
def test_valid_divisions_agree_between_the_interpreter_and_c(node_cls, dtype):
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    if info.min < 0:
        a[:4] = [info.min, info.min, info.max, -1]
        b[:4] = [1, 7, -1, -1]
        b[(a == info.min) & (b == -1)] = 2
    func = _elementwise(node_cls, dtype, 64)
    expected, result = np.zeros(64, dtype), np.zeros(64, dtype)
    interpreter.run(func, a, b, expected)
    build(func)(a, b, result)
    np.testing.assert_array_equal(result, expected)


def test_constant_divisors_other_than_zero_and_minus_one_need_no_check():
    a_buf, c_buf = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "int32", "C")

    def body(i):
        quotient = B.floordiv(a_buf[i], 4) + Div(a_buf[i], B.const(-3)) + Mod(a_buf[i], B.const(5))
        return store(c_buf, (i,), quotient)

    text = generate_c_source(prim_func("plain", (a_buf, c_buf), loops((8,), body)))
    assert "tessel_checked" not in text.split("TESSEL_EXPORT int32_t plain")[1]
    assert "/ (-3))" in text
    assert "% 5)" in text
    a, c = np.arange(-8, 8, 2, dtype="int32"), np.zeros(8, "int32")
    build(prim_func("plain", (a_buf, c_buf), loops((8,), body)))(a, c)
    np.testing.assert_array_equal(c, a // 4 + np.trunc(a / -3).astype("int32") + np.fmod(a, 5))


@pytest.mark.parametrize("node_cls", [FloorDiv, FloorMod])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("divisor", [1, 2, 7, 16, 100])
def test_vector_floor_division_by_a_positive_constant_is_whole_vector_c(node_cls, dtype, divisor):
    """A vectorized floordiv/floormod by a constant is C's `/` and `%` on the vector with the
    negative remainders corrected, not a lane loop of checked helpers; every lane agrees with
    the interpreter, negative and extreme values included."""
    a_buf, c_buf = decl_buffer((64,), dtype, "A"), decl_buffer((64,), dtype, "C")
    body = loops(
        (64,),
        lambda i: store(c_buf, (i,), node_cls(a_buf[i], B.const(divisor, dtype))),
        ForKind.VECTORIZED,
    )
    func = prim_func("divide", (a_buf, c_buf), body)
    kernel = generate_c_source(func).split("TESSEL_EXPORT int32_t divide")[1]
    assert "tessel_checked" not in kernel
    assert "tessel_l" not in kernel  # no lane loop
    info = np.iinfo(dtype)
    a = np.random.default_rng(7).integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    a[:6] = [info.min, info.max, 0, 1, info.min + 1, info.max - 1]
    if info.min < 0:
        a[6:10] = [-1, -divisor, -divisor - 1, -divisor + 1] if divisor < 100 else [-1, -2, -3, -4]
    expected, result = np.zeros(64, dtype), np.zeros(64, dtype)
    interpreter.run(func, a, expected)
    build(func)(a, result)
    np.testing.assert_array_equal(result, expected)
    numpy_op = np.floor_divide if node_cls is FloorDiv else np.mod
    np.testing.assert_array_equal(result, numpy_op(a, np.array(divisor, dtype)))


def test_constant_minus_one_divisor_is_checked_for_signed_types_only():
    signed = decl_buffer((2,), "int32", "A")
    unsigned = decl_buffer((2,), "uint32", "U")
    signed_body = loops((2,), lambda i: store(signed, (i,), Div(signed[i], B.const(-1))))
    text = generate_c_source(prim_func("negate", (signed,), signed_body))
    assert "tessel_checked_truncdiv_i32" in text.split("TESSEL_EXPORT")[-1]
    unsigned_body = loops(
        (2,), lambda i: store(unsigned, (i,), B.floordiv(unsigned[i], 4294967295))
    )
    text = generate_c_source(prim_func("divide", (unsigned,), unsigned_body))
    assert "tessel_checked" not in text.split("TESSEL_EXPORT")[-1]
    a = np.array([5, -(2**31)], "int32")
    with pytest.raises(RuntimeCallError, match="overflow"):
        build(prim_func("negate", (signed,), signed_body))(a)


def _loop_bound_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    return prim_func("f", (n, d, out), loops((B.floordiv(n, d),), lambda i: store(out, (i,), i)))


def _let_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    x = Var("x")
    return prim_func("f", (n, d, out), LetStmt(x, Div(n, d), store(out, (0,), x)))


def _if_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    return prim_func("f", (n, d, out), IfThenElse(B.gt(Mod(n, d), 0), store(out, (0,), 1)))


def _while_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    condition = B.lt(out[0], B.floordiv(n, d))
    return prim_func("f", (n, d, out), While(condition, store(out, (0,), out[0] + 1)))


def _allocation_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    scratch = decl_buffer((B.floordiv(n, d) * 1000,), "int32", "scratch")
    body = seq(store(scratch, (0,), n), store(out, (0,), scratch[0]))
    alloc = Allocate(scratch.data, scratch.dtype, scratch.shape, TRUE, DeclBuffer(scratch, body))
    return prim_func("f", (n, d, out), alloc)


def _extern_call_program():
    n, d = Var("n"), Var("d")
    out = decl_buffer((8,), "int32", "out")
    call = Evaluate(builtin.call_extern("int32", "abs", B.floordiv(n, d)))
    return prim_func("f", (n, d, out), seq(call, store(out, (0,), 1)))


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (_loop_bound_program, "the bounds of loop `i`"),
        (_let_program, "the value of `x`"),
        (_if_program, "an if condition"),
        (_while_program, "a while condition"),
        (_allocation_program, "the size of `scratch`"),
        (_extern_call_program, "the arguments of `abs`"),
    ],
)
def test_failed_division_is_reported_before_the_statement_takes_effect(make, where):
    func = make()
    out = np.full(8, 7, "int32")
    with pytest.raises(RuntimeCallError, match=f"division by zero in {where}"):
        build(func)(20, 0, out)
    np.testing.assert_array_equal(out, 7)
    if make is not _extern_call_program:  # the interpreter cannot call C functions
        with pytest.raises(InterpreterError, match="division by zero"):
            interpreter.run(func, 20, 0, np.full(8, 7, "int32"))
    expected = np.full(8, 7, "int32")
    build(func)(20, 3, out)
    if make is not _extern_call_program:
        interpreter.run(func, 20, 3, expected)
        np.testing.assert_array_equal(out, expected)


def test_failed_division_in_a_parallel_loop_skips_stores_and_raises_after_the_loop():
    func = _elementwise(FloorDiv, "int32", 64, ForKind.PARALLEL)
    a, b = np.arange(64, dtype="int32"), np.ones(64, "int32")
    b[40] = 0
    c = np.full(64, -5, "int32")
    with pytest.raises(RuntimeCallError, match="division by zero in the parallel loop `i`"):
        build(func)(a, b, c)
    assert c[40] == -5
    b[40] = 2
    build(func)(a, b, c)
    np.testing.assert_array_equal(c, a // b)
