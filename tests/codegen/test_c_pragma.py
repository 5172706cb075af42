"""Pragma AttrStmts in C: `pragma_auto_unroll_max_step` unrolls the loop nests within its budget
(`#pragma GCC unroll`), `pragma_software_prefetch` prefetches a loop's streams ahead, every
other pragma is a comment naming it; none fails to compile."""

import numpy as np

import tessel
from tessel.driver import generate_c_source
from tessel.script import parse
from tessel.tir import interpreter


def _source_lines(text):
    return [line.strip() for line in generate_c_source(parse(text)).splitlines()]


def _line_before(lines, prefix):
    """The line just before the first line starting with `prefix`."""
    position = next(n for n, line in enumerate(lines) if line.startswith(prefix))
    return lines[position - 1]


def _run_and_check(text, shape=(8, 4)):
    a, b = np.arange(np.prod(shape), dtype="float32").reshape(shape), np.zeros(shape, "float32")
    tessel.build(parse(text))(a, b)
    np.testing.assert_array_equal(b, a + 1)


AUTO_UNROLL = """
@T.prim_func
def nest(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    for i in T.serial(8, annotations={"pragma_auto_unroll_max_step": 16}):
        for j in range(4):
            B[i, j] = A[i, j] + T.float32(1)
"""


def test_auto_unroll_unrolls_the_inner_loops_whose_nest_fits_the_budget():
    lines = _source_lines(AUTO_UNROLL)
    assert "// pragma_auto_unroll_max_step = 16 (loop nests of at most 16 steps unrolled)" in lines
    assert _line_before(lines, "for (int32_t j") == "#pragma GCC unroll 4"  # 4 steps: unrolled
    assert not _line_before(lines, "for (int32_t i").startswith("#pragma")  # 32 steps: too many
    _run_and_check(AUTO_UNROLL)


def test_auto_unroll_with_a_budget_covering_the_whole_nest_unrolls_both_loops():
    text = AUTO_UNROLL.replace('max_step": 16', 'max_step": 64')
    lines = _source_lines(text)
    assert _line_before(lines, "for (int32_t i") == "#pragma GCC unroll 8"
    assert _line_before(lines, "for (int32_t j") == "#pragma GCC unroll 4"
    _run_and_check(text)


def test_auto_unroll_with_a_symbolic_budget_is_only_a_comment():
    text = AUTO_UNROLL.replace("16}", "n * 2}").replace('"float32")):', '"float32"), n: T.int32):')
    lines = _source_lines(text)
    assert "// pragma_auto_unroll_max_step = n * 2 (no C equivalent)" in lines
    assert not any(line.startswith("#pragma GCC unroll") for line in lines)
    a, b = np.ones((8, 4), "float32"), np.zeros((8, 4), "float32")
    tessel.build(parse(text))(a, b, 3)
    np.testing.assert_array_equal(b, a + 1)


def test_unknown_pragmas_become_one_line_comments_naming_them():
    text = r"""
@T.prim_func
def notes(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    for i in T.serial(8, annotations={"pragma_note": "line one\nline two \\", "pragma_level": 2}):
        for j in range(4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"pragma_block_note": "on the block"})
                B[vi, vj] = A[vi, vj] + T.float32(1)
"""
    lines = _source_lines(text)
    assert "// pragma_level = 2 (no C equivalent)" in lines
    assert "// pragma_note = 'line one\\nline two \\\\' (no C equivalent)" in lines
    assert "// pragma_block_note = 'on the block' (no C equivalent)" in lines
    _run_and_check(text)  # the comments end in a parenthesis: no line continues into code


def test_a_list_valued_pragma_attr_written_in_the_script_is_a_comment():
    text = """
@T.prim_func
def listed(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    with T.attr(A, "pragma_hint", [1, 2]):
        for i, j in T.grid(8, 4):
            B[i, j] = A[i, j] + T.float32(1)
"""
    assert "// pragma_hint = (1, 2) (no C equivalent)" in _source_lines(text)
    _run_and_check(text)


PREFETCH = """
@T.prim_func
def gemv(A: T.Buffer((64,), "float32"), W: T.Buffer((64, 32), "float32"),
         B: T.Buffer((32,), "float32")):
    acc = T.alloc_buffer((32,), "float32", scope="local")
    for j in T.vectorized(32):
        acc[j] = T.float32(0)
    for k in T.serial(64, annotations={"pragma_software_prefetch": 512}):
        for jo in T.unroll(2):
            for j in T.vectorized(16):
                acc[jo * 16 + j] = acc[jo * 16 + j] + A[k] * W[k, jo * 16 + j]
    for j in T.vectorized(32):
        B[j] = acc[j]
"""


def test_software_prefetch_asks_for_each_weight_stream_ahead_and_keeps_the_results():
    """Each iteration prefetches 512 bytes past each contiguous vector load of W that moves
    with k (the unrolled loop's two: one cache line each); not A's scalar loads, not the
    local accumulators. The results are the interpreter's."""
    lines = _source_lines(PREFETCH)
    assert "// pragma_software_prefetch = 512 (the loads' streams prefetched ahead)" in lines
    prefetches = [line for line in lines if line.startswith("__builtin_prefetch(")]
    assert prefetches == [
        "__builtin_prefetch((const char*)(W + (k * 32)) + 512, 0, 0);",
        "__builtin_prefetch((const char*)(W + ((k * 32) + 16)) + 512, 0, 0);",
    ]
    assert _line_before(lines, "__builtin_prefetch(").startswith("for (int32_t k")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(64).astype("float32")
    w = rng.standard_normal((64, 32)).astype("float32")
    got, want = np.zeros(32, "float32"), np.zeros(32, "float32")
    func = parse(PREFETCH)
    tessel.build(func)(a, w, got)
    interpreter.run(func, a, w, want)
    np.testing.assert_allclose(got, want, rtol=1e-5)
