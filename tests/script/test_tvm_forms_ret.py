"""TVM script forms of issue 30 for functions returning a value: `T.ret(value)`,
`T.ret(value, dtype=...)` and TVM's newer `return value`, all one `tir.ret` call. The
interpreter returns the value, and so does the compiled C function (a T.ret inside an
expression is refused, rule codegen.ret)."""

import numpy as np
import pytest
from tvm_forms import parse_form as _parse
from tvm_forms import roundtrip

from tessel.driver import build
from tessel.ir import assert_structural_equal
from tessel.ir.node import with_changes
from tessel.runtime import BuildError
from tessel.script.printer import script
from tessel.testing import expect_parse_error
from tessel.tir import builtin, interpreter
from tessel.tir.stmt import Evaluate

ADD_ONE = """
@T.prim_func
def add_one(a: T.int32) -> T.int32:
    T.ret(a + 1)
"""


def test_ret_of_a_scalar_round_trips_and_the_interpreter_returns_it():
    func = roundtrip(ADD_ONE)
    assert str(func.ret_type) == "int32"
    assert "def add_one(a: T.int32) -> T.int32:\n    T.ret(a + 1)" in script(func)
    rng = np.random.default_rng(3)
    for a in rng.integers(-1000, 1000, size=5):
        assert interpreter.run(func, np.int32(a)) == a + 1


def test_ret_with_a_dtype_keyword_equals_the_plain_form():
    keyword = _parse("""
        @T.prim_func
        def widen(a: T.int32) -> T.int64:
            if a < 0:
                T.ret(0, dtype="int64")
            T.ret(T.Cast("int64", a) * T.int64(3), dtype="int64")
    """)
    plain = roundtrip("""
        @T.prim_func
        def widen(a: T.int32) -> T.int64:
            if a < 0:
                T.ret(T.int64(0))
            T.ret(T.Cast("int64", a) * T.int64(3))
    """)
    assert_structural_equal(keyword, plain)
    assert interpreter.run(keyword, np.int32(-4)) == 0
    assert interpreter.run(keyword, np.int32(7)) == 21


def test_return_statement_is_the_same_ret_call():
    written = _parse("""
        @T.prim_func
        def add_one(a: T.int32) -> T.int32:
            return a + 1
    """)
    assert_structural_equal(written, _parse(ADD_ONE))
    assert isinstance(written.body, Evaluate) and written.body.value.op is builtin.ret_op


RET_FROM_BUFFER = """
@T.prim_func
def first_positive(A: T.Buffer((8,), "float32")) -> T.float32:
    for i in range(8):
        if A[i] > T.float32(0):
            T.ret(A[i])
    T.ret(T.float32(-1))
"""


def test_ret_inside_a_loop_leaves_the_function():
    func = roundtrip(RET_FROM_BUFFER)
    rng = np.random.default_rng(4)
    for _ in range(4):
        a = rng.standard_normal(8).astype("float32")
        positive = a[a > 0]
        expected = positive[0] if positive.size else -1.0
        assert interpreter.run(func, a) == pytest.approx(expected)


def test_c_returns_the_value_the_interpreter_returns():
    func = _parse(RET_FROM_BUFFER)
    compiled = build(func)
    rng = np.random.default_rng(5)
    for _ in range(4):
        a = rng.standard_normal(8).astype("float32")
        assert compiled(a) == interpreter.run(func, a)
    assert compiled(-np.ones(8, "float32")) == -1


def test_c_refuses_a_ret_inside_an_expression():
    func = _parse("""
        @T.prim_func
        def f(a: T.int32) -> T.int32:
            T.ret(a + 1)
    """)
    nested = Evaluate(builtin.ret(builtin.ret(func.params[0])))
    with pytest.raises(BuildError, match="inside an expression") as err:
        build(with_changes(func, body=nested))
    assert err.value.rule == "codegen.ret"


def test_ret_dtype_that_differs_from_the_value_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(a: T.int32) -> T.int32:
            T.ret(a + 1, dtype="float32")  # error: T.ret computes int32 here
    """)


def test_return_of_the_wrong_type_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(a: T.int32) -> T.int64:
            return a + 1  # error: the function returns int64, but this value is int32
    """)


def test_return_without_a_return_type_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            return A[0]  # error: in a function without a return type
    """)
