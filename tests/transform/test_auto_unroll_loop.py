"""AutoUnrollLoop: under `pragma_auto_unroll_max_step` = N, each serial loop of constant extent
whose nest runs at most N statements (and holds only such loops) becomes UNROLLED, which C
prints as `#pragma GCC unroll`; the C printer no longer decides it. Results are unchanged, in the
interpreter and in C."""

from __future__ import annotations

import numpy as np

from tessel.codegen import generate
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.ir.transform import PrintAfterAll
from tessel.runtime.compiler import compile_source
from tessel.runtime.module import Module
from tessel.script import parse
from tessel.script import tir as T
from tessel.tir import interpreter
from tessel.tir.stmt import For, ForKind
from tessel.transform import AutoUnrollLoop, lower


def _auto_unroll(func):
    return AutoUnrollLoop()(IRModule.from_func(func))[func.name]


def _compiled_as_is(func) -> Module:
    """The C backend's code for `func` as written (lowering would run the pass itself)."""
    source = generate(IRModule.from_func(func))
    return Module(compile_source(source.source), list(source.entries), source.source)


def _kinds(func):
    return {n.loop_var.name: n.kind for n in post_order(func.body) if isinstance(n, For)}


def _check_same_everywhere(before, after, shape=(32,)):
    """Before and after the pass, in the interpreter and in C: identical outputs."""
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    results = []
    for func in (before, after):
        for run in (interpreter.run, lambda f, *args: _compiled_as_is(f)(*args)):
            b = np.zeros(shape, "float32")
            run(func, a.copy(), b)
            results.append(b)
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


@T.prim_func
def nest(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    for i in range(8):
        with T.attr(i, "pragma_auto_unroll_max_step", 16):
            for j in range(4):
                B[i * 4 + j] = A[i * 4 + j] + T.float32(1)


def test_the_inner_loop_within_the_budget_becomes_unrolled():
    @T.prim_func
    def expected(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        for i in range(8):
            with T.attr(i, "pragma_auto_unroll_max_step", 16):
                for j in T.unroll(4):
                    B[i * 4 + j] = A[i * 4 + j] + T.float32(1)

    after = _auto_unroll(nest)
    assert_structural_equal(after, with_changes(expected, attrs=after.attrs))
    _check_same_everywhere(nest, after)


def test_a_budget_covering_the_whole_nest_unrolls_the_loop_it_is_about():
    text = nest.script().replace('max_step", 16', 'max_step", 32')
    before = parse(text)
    after = _auto_unroll(before)
    assert _kinds(after) == {"i": ForKind.UNROLLED, "j": ForKind.UNROLLED}
    _check_same_everywhere(before, after)


def test_c_prints_the_unrolled_kind_and_no_longer_decides_itself():
    as_written = generate(IRModule.from_func(nest)).source
    assert "#pragma GCC unroll" not in as_written  # the printer only prints
    comment = "pragma_auto_unroll_max_step = 16 (loop nests of at most 16 steps unrolled)"
    assert comment in as_written
    source = generate(IRModule.from_func(_auto_unroll(nest))).source
    lines = [line.strip() for line in source.splitlines()]
    inner = next(n for n, line in enumerate(lines) if line.startswith("for (int32_t j"))
    assert lines[inner - 1] == "#pragma GCC unroll 4"


def test_loops_that_stay_loops_keep_their_outer_loops_rolled():
    @T.prim_func
    def blocked(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), n: T.int32):
        with T.attr("default", "pragma_auto_unroll_max_step", 64):
            for i in range(2):
                for j in T.parallel(4):
                    B[i * 4 + j] = A[i * 4 + j]
            for k in range(2):
                for m in range(n):
                    B[k] = A[k] + T.float32(m)
            for w in range(2):
                while B[w] < T.float32(-1e30):
                    B[w] = T.float32(0)

    after = _auto_unroll(blocked)
    assert _kinds(after) == {
        "i": ForKind.SERIAL,
        "j": ForKind.PARALLEL,
        "k": ForKind.SERIAL,
        "m": ForKind.SERIAL,
        "w": ForKind.SERIAL,
    }


def test_without_a_usable_budget_nothing_changes():
    @T.prim_func
    def symbolic(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), n: T.int32):
        for i in range(8):
            with T.attr(i, "pragma_auto_unroll_max_step", n * 2):
                with T.attr(i, "pragma_other", 0):
                    for j in range(4):
                        B[i * 4 + j] = A[i * 4 + j]

    for func in (symbolic, parse(nest.script().replace('max_step", 16', 'max_step", 0'))):
        mod = IRModule.from_func(func)
        assert AutoUnrollLoop()(mod) is mod


def test_lowering_shows_the_pass_by_name_and_the_unrolled_loop_after_it():
    @T.prim_func
    def annotated(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
        for i in T.serial(8, annotations={"pragma_auto_unroll_max_step": 16}):
            for j in range(4):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] + T.float32(1)

    printed = []
    lowered = lower(annotated, instruments=[PrintAfterAll(write=printed.append)])
    before = next(p for p in printed if p.startswith("# after clamp_vector_exp"))
    after = next(p for p in printed if p.startswith("# after auto_unroll_loop"))
    assert "T.unroll(4)" not in before and "for j in T.unroll(4):" in after
    assert _kinds(lowered["annotated"]) == {"i": ForKind.SERIAL, "j": ForKind.UNROLLED}
