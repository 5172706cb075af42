"""Functions returning a value in C (c_source.py, c_stmt.py): `T.ret(v)` writes v through a
trailing pointer and returns, the runtime gives it back to the Python caller as the
interpreter does, from the tail or from inside branches and loops; what C cannot return is
refused with rule codegen.ret."""

import textwrap

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir.module import IRModule
from tessel.runtime import BuildError, RuntimeCallError
from tessel.script import parse
from tessel.tir import interpreter

HEADER = "from tessel.script import tir as T\n"


def _parse(source: str):
    return parse(HEADER + textwrap.dedent(source))


def _same(func, *args) -> object:
    """Run `func` in the interpreter and in C on `args`; both values, checked equal."""
    expected = interpreter.run(func, *args)
    got = build(func)(*args)
    assert type(got) is type(expected), (type(got), type(expected))
    np.testing.assert_array_equal(got, expected)
    return got


def test_int32_return_of_a_scalar_expression():
    func = _parse("""
        @T.prim_func
        def mix(a: T.int32, b: T.int32) -> T.int32:
            T.ret(a * 3 - b // 2)
    """)
    rng = np.random.default_rng(1)
    for a, b in rng.integers(-10_000, 10_000, size=(5, 2)):
        assert _same(func, np.int32(a), np.int32(b)) == a * 3 - b // 2


def test_float32_return_of_a_reduction_over_a_buffer():
    func = _parse("""
        @T.prim_func
        def total(A: T.Buffer((16,), "float32")) -> T.float32:
            s = T.alloc_buffer((1,), "float32")
            s[0] = T.float32(0)
            for i in range(16):
                s[0] = s[0] + A[i]
            T.ret(s[0])
    """)
    a = np.random.default_rng(2).standard_normal(16).astype("float32")
    assert _same(func, a) == pytest.approx(a.sum(), rel=1e-5)


def test_bool_return():
    func = _parse("""
        @T.prim_func
        def all_positive(A: T.Buffer((8,), "int32")) -> T.bool:
            for i in range(8):
                if A[i] <= 0:
                    T.ret(False)
            T.ret(True)
    """)
    rng = np.random.default_rng(3)
    assert _same(func, np.arange(1, 9, dtype="int32")) is True
    for _ in range(4):
        _same(func, rng.integers(-2, 20, size=8).astype("int32"))


def test_return_inside_an_if_leaves_the_function():
    func = _parse("""
        @T.prim_func
        def widen(a: T.int32) -> T.int64:
            if a < 0:
                T.ret(T.int64(0))
            T.ret(T.Cast("int64", a) * T.int64(3_000_000_000))
    """)
    assert _same(func, np.int32(-4)) == 0
    assert _same(func, np.int32(7)) == 21_000_000_000


def test_return_inside_a_loop_frees_the_heap_workspace_first():
    func = _parse("""
        @T.prim_func
        def first_big(A: T.Buffer((4096,), "float32")) -> T.int32:
            W = T.alloc_buffer((4096,), "float32", scope="global.workspace")
            for i in range(4096):
                W[i] = A[i] * T.float32(2)
            for i in range(4096):
                if W[i] > T.float32(7):
                    T.ret(i)
            T.ret(-1)
    """)
    a = np.random.default_rng(4).standard_normal(4096).astype("float32")
    a[1000] = 5
    source = build(func).source
    assert source.count("tessel_workspace_free(") >= 2  # on the early return and at the end
    assert _same(func, a) == np.argmax(a * 2 > 7)
    assert _same(func, np.zeros(4096, "float32")) == -1


def test_leaving_the_body_without_a_return_is_a_runtime_error():
    func = _parse("""
        @T.prim_func
        def maybe(a: T.int32) -> T.int32:
            if a > 0:
                T.ret(a)
    """)
    compiled = build(func)
    assert compiled(np.int32(5)) == 5
    with pytest.raises(RuntimeCallError, match="ended without returning a value"):
        compiled(np.int32(-5))


def test_return_inside_a_parallel_loop_is_refused():
    func = _parse("""
        @T.prim_func
        def find(A: T.Buffer((8,), "int32")) -> T.int32:
            for i in T.parallel(8):
                if A[i] == 0:
                    T.ret(i)
            T.ret(-1)
    """)
    with pytest.raises(BuildError, match="parallel loop") as err:
        build(func)
    assert err.value.rule == "codegen.ret"


def test_a_returning_function_called_by_another_is_refused():
    mod = parse("""
from tessel.script import ir as I
from tessel.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def helper(A: T.Buffer((4,), "float32")) -> T.float32:
        T.ret(A[0])

    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        Module.helper(A.data)
""")
    assert isinstance(mod, IRModule)
    with pytest.raises(BuildError, match="called by another function") as err:
        build(mod)
    assert err.value.rule == "codegen.ret"
