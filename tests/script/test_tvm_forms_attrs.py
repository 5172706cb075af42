"""TVM script forms of issue 30 about attributes: `T.target(..., host=...)` in T.func_attr, and
the bare `T.attr(node, key, value)` statement whose body is the rest of its block (as TVM
prints an AttrStmt that ends its block)."""

import numpy as np
import pytest
from tvm_forms import parse_form as _parse
from tvm_forms import roundtrip

from tessel.driver import build
from tessel.ir import assert_structural_equal
from tessel.ir.target import TargetValue
from tessel.script.printer import script
from tessel.testing import check_same_results, expect_parse_error
from tessel.tir import interpreter
from tessel.tir.stmt import AttrStmt, For

# ------------------------------------------------------------------ T.target with a host
TARGET_WITH_HOST = """
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"target": T.target("llvm", host="llvm"), "tir.noalias": T.bool(True)})
    for i in range(8):
        B[i] = A[i] * T.float32(3)
"""


def test_target_with_host_keyword_prints_as_the_dict_form_and_runs_in_c():
    func = roundtrip(TARGET_WITH_HOST)
    target = func.attrs["target"]
    assert isinstance(target, TargetValue)
    assert dict(target.config) == {"kind": "llvm", "host": "llvm"}
    assert 'T.target({"kind": "llvm", "host": "llvm"})' in script(func)
    check_same_results(func, func)


def test_target_dict_with_a_host_dict_round_trips_and_equals_the_keyword_form():
    func = roundtrip("""
        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((4, 4), "float16")):
                T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80",
                                                 "host": {"kind": "llvm", "opt-level": 3}}),
                             "global_symbol": "main"})
                for i, j in T.grid(4, 4):
                    A[i, j] = A[j, i]
    """)
    text = script(func)
    assert '"host": {"kind": "llvm", "opt-level": 3}' in text
    keyword = _parse("""
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target("cuda", host={"kind": "llvm"})})
            A[0] = T.float32(0)
    """)
    written = _parse("""
        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target({"kind": "cuda", "host": {"kind": "llvm"}})})
            A[0] = T.float32(0)
    """)
    assert_structural_equal(keyword, written)


def test_target_string_with_options_and_a_host_becomes_the_dict_form():
    func = roundtrip("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target("llvm -mcpu=skylake -mattr=+avx2,+fma -num-cores=4",
                                            host="llvm")})
            A[0] = T.float32(1)
    """)
    assert dict(func.attrs["target"].config) == {
        "kind": "llvm",
        "mcpu": "skylake",
        "mattr": ("+avx2", "+fma"),
        "num-cores": 4,
        "host": "llvm",
    }
    assert (
        'T.target({"kind": "llvm", "mcpu": "skylake", "mattr": ["+avx2", "+fma"], '
        '"num-cores": 4, "host": "llvm"})'
    ) in script(func)


def test_target_option_without_a_dash_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            target = T.target("llvm mcpu", host="llvm")  # error: cannot read the option 'mcpu'
    """)


def test_target_host_given_twice_is_refused_at_the_keyword():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            target = T.target({"kind": "cuda", "host": "x"}, host="y")  # error: a host twice
            A[0] = T.float32(1)
    """)


def test_target_host_that_is_not_a_target_is_refused():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": T.target("cuda", host=3)})  # error: host= must be
            A[0] = T.float32(1)
    """)
    assert err.span.column > 40  # points at the host argument


# ------------------------------------------------------------------ bare T.attr
BARE_ATTR = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        B[i] = A[i]
    T.attr(A.data, "pragma_note", "rest of the block")
    for j in range(16):
        B[j] = B[j] + A[15 - j] * T.float32(0.5)
"""

WITH_ATTR = """
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        B[i] = A[i]
    with T.attr(A.data, "pragma_note", "rest of the block"):
        for j in range(16):
            B[j] = B[j] + A[15 - j] * T.float32(0.5)
"""


def test_bare_attr_wraps_the_rest_of_the_block_like_the_with_form():
    func = roundtrip(BARE_ATTR)
    assert_structural_equal(func, _parse(WITH_ATTR))
    attr = func.body.seq[1]
    assert isinstance(attr, AttrStmt) and isinstance(attr.body, For)
    text = script(func)
    assert '    T.attr(A.data, "pragma_note", "rest of the block")\n    for j in range(16):' in text
    assert "with T.attr" not in text


def test_bare_attr_runs_the_same_in_the_interpreter_and_c():
    check_same_results(_parse(BARE_ATTR), _parse(BARE_ATTR))


def test_attr_followed_by_statements_prints_with_a_with():
    func = roundtrip("""
        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            with T.attr(A.data, "pragma_first", 1):
                A[0] = 1
            A[1] = 2
    """)
    assert 'with T.attr(A.data, "pragma_first", 1):' in script(func)


BARE_ATTR_IN_BLOCK = """
@T.prim_func
def main(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("row"):
            vi = T.axis.spatial(8, i)
            T.reads(A[vi, 0:8])
            T.writes(B[vi])
            T.attr(0, "pragma_row", vi)
            T.attr(0, "pragma_kind", "sum")
            B[vi] = T.float32(0)
            for k in range(8):
                B[vi] = B[vi] + A[vi, k]
"""


def test_bare_attrs_after_a_block_header_nest_and_compile():
    func = roundtrip(BARE_ATTR_IN_BLOCK)
    text = script(func)
    attrs = '            T.attr(0, "pragma_row", vi)\n            T.attr(0, "pragma_kind", "sum")\n'
    assert attrs in text
    a = np.random.default_rng(1).standard_normal((8, 8)).astype("float32")
    b = np.zeros(8, "float32")
    interpreter.run(func, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    check_same_results(func, func)


def test_bare_attr_with_a_non_string_key_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.attr(A.data, 3, 1)  # error: T.attr expects a string key
            A[0] = T.float32(1)
    """)


@pytest.mark.parametrize("form", [BARE_ATTR, WITH_ATTR])
def test_attr_forms_build_to_c(form):
    build(_parse(form))
