"""Builtins and forms that TVM scripts use (issue 12): each parses, prints, parses back to
equal IR, and where it executes, runs the same in the interpreter and compiled C."""

import textwrap

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir import assert_structural_equal
from tessel.ir.expr import Call, Cast, Div, FloatImm, IntImm, Let
from tessel.runtime import BuildError
from tessel.script import parse
from tessel.script.printer import script
from tessel.testing import check_same_results, expect_parse_error
from tessel.tir import builtin, interpreter
from tessel.tir.stmt import For, LetStmt

HEADER = "from tessel.script import tir as T\nfrom tessel.script import ir as I\n"


def _parse(source: str):
    return parse(HEADER + textwrap.dedent(source))


def roundtrip(source: str):
    """Parse `source`, print, parse again: equal IR and a stable text; the parsed IR."""
    original = _parse(source)
    text = script(original)
    reparsed = parse(text)
    assert_structural_equal(reparsed, original)
    assert script(reparsed) == text
    return original


def _stores(func):
    """The values stored, in program order."""
    from tessel.ir.functor import post_order
    from tessel.tir.stmt import BufferStore

    return [n.value for n in post_order(func.body) if isinstance(n, BufferStore)]


# ------------------------------------------------------------------ 1. dtype= and friends
MATH_WITH_DTYPE = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        B[i] = T.exp(A[i], dtype="float32") + T.pow(A[i], T.float32(2), dtype="float32") \\
            + T.if_then_else(i < 8, A[i], 1.0, dtype="float32")
"""


def test_math_ops_and_if_then_else_accept_dtype():
    func = roundtrip(MATH_WITH_DTYPE)
    assert "T.exp(A[i]) + T.pow(A[i], T.float32(2.0))" in script(func)
    check_same_results(func, func)


def test_math_op_dtype_that_differs_from_the_result_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.exp(A[i], dtype="float64")  # error: T.exp computes float32 here
    """)


CASTS = """
@T.prim_func
def main(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "int8")):
    for i in range(16):
        B[i] = T.cast(A[i], "float32") + T.cast(B[i], "float32") * T.float32(0.5)
        C[i] = T.cast(T.max(T.min(A[i], T.max_value("int8")), T.min_value("int8")), "int8")
"""


def test_cast_and_min_max_value():
    func = roundtrip(CASTS)
    first, second = _stores(func)
    assert isinstance(first.a, Cast) and not isinstance(first.b.a, Cast)  # no cast to its own type
    check_same_results(func, func)


def test_min_value_and_max_value_are_constants_of_the_dtype():
    func = _parse("""
        @T.prim_func
        def main(A: T.Buffer((3,), "float32"), B: T.Buffer((2,), "int64")):
            A[0] = T.min_value("float32")
            A[1] = T.max_value("float32")
            A[2] = T.float32(0)
            B[0] = T.min_value("int64")
            B[1] = T.max_value("int64")
    """)
    values = _stores(func)
    assert isinstance(values[0], FloatImm) and values[0].value == float(np.finfo("float32").min)
    assert isinstance(values[3], IntImm) and values[3].value == -(2**63)
    assert values[4].value == 2**63 - 1
    check_same_results(func, func)
    roundtrip(script(func).split("\n", 1)[1])


DIVS = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "int32")):
    for i in range(16):
        B[i] = T.Div(A[i], T.float32(4))
        C[i] = T.Div(i - 8, 3) + T.FloorDiv(i - 8, 3) + T.Mod(i - 8, 3) + T.FloorMod(i - 8, 3)
"""


def test_div_node():
    func = roundtrip(DIVS)
    float_div, _ = _stores(func)
    assert isinstance(float_div, Div)
    check_same_results(func, func)


EXTERNS = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.call_extern("fabsf", A[i], dtype="float32") \\
            + T.call_pure_extern("float32", "fabsf", A[i]) \\
            + T.call_pure_extern("fabsf", A[i], dtype="float32")
"""


def test_call_extern_dtype_keyword_and_call_pure_extern_build_in_c():
    func = roundtrip(EXTERNS)
    text = script(func)
    assert 'T.call_extern("float32", "fabsf", A[i])' in text
    assert text.count('T.call_pure_extern("float32", "fabsf", A[i])') == 2
    a = np.random.default_rng(0).standard_normal(8).astype("float32")
    b = np.zeros(8, "float32")
    build(func)(a, b)
    np.testing.assert_allclose(b, 3 * np.abs(a), rtol=1e-6)


def test_call_extern_dtype_keyword_names_the_function_first():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.call_extern("not a name", A[i], dtype="float32")  # error: needs the name
    """)


PACKED = """
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    T.evaluate(T.call_packed("tvm.contrib.my_func", A.data, 8))
    T.evaluate(T.call_packed("other", 1, dtype="float32"))
"""


def test_call_packed_parses_and_prints_but_c_refuses_it():
    func = roundtrip(PACKED)
    text = script(func)
    assert 'T.call_packed("tvm.contrib.my_func", A.data, 8)' in text
    assert 'T.call_packed("other", 1, dtype="float32")' in text
    with pytest.raises(BuildError, match="packed-function runtime") as err:
        build(func)
    assert err.value.rule == "codegen.call-packed"


# ------------------------------------------------------------------ 2. ret, lets, stores, range
def test_ret_returns_from_the_interpreter_and_from_c():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((4,), "int32")) -> T.int32:
            if A[0] > 0:
                T.ret(A[0] * 2)
            T.ret(-1)
    """)
    assert "T.ret(A[0] * 2)" in script(func)
    assert interpreter.run(func, np.array([3, 0, 0, 0], "int32")) == 6
    assert interpreter.run(func, np.array([-3, 0, 0, 0], "int32")) == -1
    compiled = build(func)  # C returns the value too (tests/codegen/test_c_ret.py)
    assert compiled(np.array([3, 0, 0, 0], "int32")) == 6
    assert compiled(np.array([-3, 0, 0, 0], "int32")) == -1


LET_STMT_FORMS = """
@T.prim_func
def main(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        x = T.LetStmt(A[i] * 2)
        with T.LetStmt(x + 1) as y:
            B[i] = y
        z = T.int32()
        with T.LetStmt(x + 2, var=z):
            B[i] = B[i] + z
        w = T.int64()
        with T.let(w, i):
            B[i] = B[i] + T.Cast("int32", w)
        B[i] = B[i] * 2
"""


def test_let_stmt_forms():
    func = roundtrip(LET_STMT_FORMS)
    text = script(func)
    # a LetStmt followed by other statements prints in its `with` form
    assert "with T.LetStmt(x + 1) as y:" in text and "x: T.int32 = A[i] * 2" in text
    lets = [n for n in _walk(func) if isinstance(n, LetStmt)]
    assert sorted(str(let.var.dtype) for let in lets) == ["int32", "int32", "int32", "int64"]
    check_same_results(func, func)


def test_let_stmt_type_annotation_casts_the_value():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((8,), "int64")):
            for i in range(8):
                x = T.LetStmt(i, T.int64)
                A[i] = x
    """)
    let = next(n for n in _walk(func) if isinstance(n, LetStmt))
    assert str(let.var.dtype) == "int64"


def test_let_stmt_needs_exactly_one_variable():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            x = T.int32()
            with T.LetStmt(1, var=x) as y:  # error: exactly one of them
                A[0] = y
    """)


def test_let_expression_where_form():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((8,), "int32")):
            v = T.int32()
            for i in range(8):
                A[i] = T.Let(v * v + 1, where={v: A[i] - 3})
    """)
    (value,) = _stores(func)
    assert isinstance(value, Let)
    check_same_results(func, func)


def test_store_casts_value_to_buffer_dtype():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int32"),
                 C: T.Buffer((8,), "int8")):
            for i in range(8):
                A[i] = i * 2
                B[i] = T.int64(7)
                C[i] = B[i] + 1
    """)
    first, second, third = _stores(func)
    assert isinstance(first, Cast) and str(first.dtype) == "float32"
    assert isinstance(second, IntImm) and str(second.dtype) == "int32"  # constants fold
    assert isinstance(third, Cast) and str(third.dtype) == "int8"
    check_same_results(func, func)


def test_range_with_annotations():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((8,), "float32")):
            for i in range(2, 8, annotations={"pragma_unroll_explicit": 0, "key": [1, 2]}):
                A[i] = A[i] + T.float32(1)
    """)
    loop = func.body
    assert isinstance(loop, For) and dict(loop.annotations)["pragma_unroll_explicit"] == 0
    check_same_results(func, func)


def _walk(func):
    from tessel.ir.functor import post_order

    return list(post_order(func.body))


def test_builtin_ops_are_registered():
    for op in (builtin.call_pure_extern_op, builtin.call_packed_op, builtin.address_of_op):
        assert builtin.ALL_OPS[op.name] is op
    assert isinstance(builtin.ret(1), Call)


# ------------------------------------------------------------------ 3. targets and GPU threads
def test_target_values_in_func_attr():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80", "keys": ["gpu"]}),
                         "host": T.target("llvm"), "tir.noalias": True})
            A[0] = T.float32(1)
    """)
    text = script(func)
    assert 'T.target({"kind": "cuda", "arch": "sm_80", "keys": ["gpu"]})' in text
    assert 'T.target("llvm")' in text
    other = _parse("""
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_86", "keys": ["gpu"]}),
                         "host": T.target("llvm"), "tir.noalias": True})
            A[0] = T.float32(1)
    """)
    with pytest.raises(AssertionError):
        assert_structural_equal(other, func)


def test_target_needs_a_kind():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target({"arch": "sm_80"})})  # error: T.target expects
            A[0] = T.float32(1)
    """)


LAUNCHES = """
@T.prim_func
def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({"target": T.target("cuda")})
    with T.attr(0, "device_id", 0):
        with T.attr(0, "device_type", 2):
            bx = T.launch_thread("blockIdx.x", 4)
            tx = T.env_thread("threadIdx.x")
            with T.launch_thread(tx, 32):
                B[bx * 64 + tx] = A[bx * 64 + tx] * T.float32(2)
            with T.launch_thread("threadIdx.y", 32) as ty:
                B[bx * 64 + 32 + ty] = A[bx * 64 + 32 + ty] + T.float32(1)
            T.launch_thread(tx, 1)
            B[bx] = B[bx] + A[tx]
"""


def test_launch_thread_and_env_thread_round_trip():
    func = roundtrip(LAUNCHES)
    text = script(func)
    assert 'tx = T.env_thread("threadIdx.x")' in text  # launched twice: declared once
    assert 'bx = T.launch_thread("blockIdx.x", 4)' in text
    assert "with T.launch_thread(tx, 32):" in text
    assert 'with T.launch_thread("threadIdx.y", 32) as ty:' in text


def test_interpreter_runs_thread_launches_serially_and_c_refuses_them():
    func = _parse(LAUNCHES)
    a = np.random.default_rng(0).standard_normal(256).astype("float32")
    b = np.zeros(256, "float32")
    interpreter.run(func, a, b)
    expected = np.zeros(256, "float32")
    for bx in range(4):
        expected[bx * 64 : bx * 64 + 32] = a[bx * 64 : bx * 64 + 32] * 2
        expected[bx * 64 + 32 : bx * 64 + 64] = a[bx * 64 + 32 : bx * 64 + 64] + 1
    expected[:4] += a[0]
    np.testing.assert_allclose(b, expected, rtol=1e-6)
    with pytest.raises(BuildError, match="no GPU threads") as err:
        build(func)
    assert err.value.rule == "codegen.thread-launch"


def test_launch_thread_of_a_plain_variable_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), n: T.int32):
            T.launch_thread(n, 4)  # error: `n` is not a thread variable
            A[0] = T.float32(1)
    """)


THREAD_BOUND_LOOPS = """
@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(128, bx * 32 + tx)
                B[vi] = A[vi] * T.float32(3)
"""


def test_thread_bound_loops_run_serially_in_the_interpreter_and_c_refuses_them():
    func = roundtrip(THREAD_BOUND_LOOPS)
    assert 'T.thread_binding(4, thread="blockIdx.x")' in script(func)
    a = np.random.default_rng(1).standard_normal(128).astype("float32")
    b = np.zeros(128, "float32")
    interpreter.run(func, a, b)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)
    with pytest.raises(BuildError, match="blockIdx.x") as err:
        build(func)
    assert err.value.rule == "codegen.thread-binding"


# ------------------------------------------------------------------ 4. pointers, buffers, meta
POINTERS = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    T.evaluate(
        T.call_extern("handle", "memcpy", B.access_ptr("w", offset=2), A.access_ptr("r"), 16)
    )
    T.evaluate(T.call_extern("handle", "memcpy", T.address_of(B[8]), T.address_of(A[4]), 8))
"""


def test_access_ptr_and_address_of_round_trip_and_run_in_c():
    func = roundtrip(POINTERS)
    text = script(func)
    assert 'T.tvm_access_ptr(T.type_annotation("float32"), B.data, 2, 14, 2)' in text
    assert "T.address_of(B[8])" in text
    a = np.arange(16, dtype="float32")
    b = np.zeros(16, "float32")
    build(func)(a, b)
    expected = np.zeros(16, "float32")
    expected[2:6] = a[0:4]
    expected[8:10] = a[4:6]
    np.testing.assert_array_equal(b, expected)


def test_access_ptr_needs_a_valid_mask():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.evaluate(T.call_extern("handle", "g", A.access_ptr("x")))  # error: access mask
    """)


def test_buffer_type_and_positional_data():
    func = roundtrip("""
        @T.prim_func
        def main(a: T.handle, B: T.Buffer((16,), "float32", buffer_type="default")):
            A = T.match_buffer(a, (16,), "float32", buffer_type="auto_broadcast")
            C = T.decl_buffer((4, 4), "float32", B.data)
            D = T.Buffer((16,), "float32", A.data)
            for i in range(16):
                C[i // 4, i % 4] = D[i] + T.float32(1)
    """)
    check_same_results(func, func)
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32", buffer_type="strided")):  # error: unknown buffer_type
            A[0] = T.float32(1)
    """)


def test_meta_var_substitutes_instead_of_binding():
    func = _parse("""
        @T.prim_func
        def main(A: T.Buffer((8,), "int32")):
            for i in range(8):
                j = T.meta_var(i * 2 % 8)
                lo, hi = T.meta_var((0, 4))
                if lo <= j and j < hi:
                    A[i] = j
    """)
    assert not any(isinstance(n, LetStmt) for n in _walk(func))
    roundtrip(script(func).split("\n", 1)[1])
    check_same_results(func, func)


def test_private_function_with_global_symbol_is_refused():
    expect_parse_error("""
        @T.prim_func(private=True)
        def f(A: T.Buffer((4,), "float32")):  # error: sets a global_symbol
            T.func_attr({"global_symbol": "f"})
            A[0] = T.float32(1)
    """)
