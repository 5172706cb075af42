"""TVM script forms of issue 30 for buffers: `axis_separators` on a `T.match_buffer` of a
sub-region. It parses, prints and runs: over memory that is one chunk (a flat parameter) the view's
groups are rows of that chunk, in the interpreter and in C alike; over chunked memory (a buffer
with axis separators of its own) C refuses a view that does not start a chunk (a LoweringError
naming the buffer)."""

# ruff: noqa: E501  (an error marker shares the line of the statement it marks)

import numpy as np
import pytest
from tvm_forms import parse_form as _parse
from tvm_forms import roundtrip

from tessel.driver import build
from tessel.ir import assert_structural_equal
from tessel.script.printer import script
from tessel.testing import check_same_results, expect_parse_error
from tessel.tir import interpreter
from tessel.transform.errors import LoweringError

SEPARATED_VIEW = """
@T.prim_func
def rows(A: T.Buffer((4, 2, 4), "float32"), B: T.Buffer((4, 8), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi, 0:2, 0:4])
            T.writes(B[vi, 0:8])
            tile = T.match_buffer(A[vi, 0:2, 0:4], (2, 4), axis_separators=[1])
            for j, k in T.grid(2, 4):
                B[vi, j * 4 + k] = tile[j, k] * T.float32(2)
"""


def test_match_buffer_of_a_region_keeps_its_axis_separators():
    func = roundtrip(SEPARATED_VIEW)
    text = script(func)
    assert 'tile = T.match_buffer(A[vi, 0:2, 0:4], (2, 4), "float32", axis_separators=[1])' in text
    match = func.body.block.body.body.block.match_buffers[0]
    assert match.buffer.axis_separators == (1,)
    other = _parse(SEPARATED_VIEW.replace("axis_separators=[1]", "axis_separators=[]"))
    with pytest.raises(AssertionError):
        assert_structural_equal(other, func)


def test_the_interpreter_reads_a_separated_view_of_a_region():
    func = _parse(SEPARATED_VIEW)
    a = np.random.default_rng(5).standard_normal((4, 2, 4)).astype("float32")
    b = np.zeros((4, 8), "float32")
    interpreter.run(func, a, b)
    np.testing.assert_allclose(b, a.reshape(4, 8) * 2, rtol=1e-6)


def test_c_runs_a_separated_view_of_one_chunk_like_the_interpreter():
    func = _parse(SEPARATED_VIEW)
    check_same_results(func, func)
    a = np.random.default_rng(6).standard_normal((4, 2, 4)).astype("float32")
    b = np.zeros((4, 8), "float32")
    build(func)(a, b)
    np.testing.assert_allclose(b, a.reshape(4, 8) * 2, rtol=1e-6)


CHUNKED_VIEW = """
@T.prim_func
def rows(A: T.Buffer((4, 2, 4), "float32"), B: T.Buffer((4, 8), "float32")):
    S = T.alloc_buffer((4, 2, 4), "float32", axis_separators=[1])
    for i, j, k in T.grid(4, 2, 4):
        with T.block("copy"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            S[vi, vj, vk] = A[vi, vj, vk]
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            T.reads(S[vi, 0:2, 0:4])
            T.writes(B[vi, 0:8])
            tile = T.match_buffer(S[vi, 0:2, 0:4], (2, 4), axis_separators=[1])
            for j, k in T.grid(2, 4):
                B[vi, j * 4 + k] = tile[j, k] * T.float32(2)
"""


def test_c_refuses_a_separated_view_inside_a_chunk_of_chunked_memory():
    # S is 4 chunks of 8; the view would be chunks of 4 starting inside one of them
    func = _parse(CHUNKED_VIEW)
    a = np.random.default_rng(7).standard_normal((4, 2, 4)).astype("float32")
    b = np.zeros((4, 8), "float32")
    interpreter.run(func, a, b)
    np.testing.assert_allclose(b, a.reshape(4, 8) * 2, rtol=1e-6)
    with pytest.raises(LoweringError, match="buffer `tile` has axis separators"):
        build(func)


def test_a_chunked_buffer_without_a_view_runs_in_c():
    func = _parse(CHUNKED_VIEW.replace(", axis_separators=[1])", ")"))
    check_same_results(func, func)


def test_the_same_view_without_separators_runs_the_same_in_c():
    func = _parse(SEPARATED_VIEW.replace(", axis_separators=[1]", ""))
    check_same_results(func, func)


@pytest.mark.parametrize(
    ("separators", "message"),
    [("[2, 1]", "must be increasing"), ('"x"', "a list of integers"), ("[3]", "out-of-range")],
)
def test_bad_axis_separators_are_refused(separators, message):
    expect_parse_error(f"""
        @T.prim_func
        def f(A: T.Buffer((4, 2, 4), "float32")):
            for i in range(4):
                with T.block("row"):
                    vi = T.axis.spatial(4, i)
                    tile = T.match_buffer(A[vi, 0:2, 0:4], (2, 4), axis_separators={separators})  # error: {message}
                    tile[0, 0] = T.float32(0)
    """)
