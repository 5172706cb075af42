"""HoistDivisions: a division by a run-time value that a loop's inner loops repeat is bound once
at the top of the loop's body, and only where its divisor is proved >= 1 and its variables are
bound outside the loop; results agree before and after (interpreter, C), and a symbolic dense
kernel's C computes its row tile once per tile."""

from __future__ import annotations

import numpy as np

from tessel import te, topi
from tessel.arith.dims import symbol
from tessel.driver import build
from tessel.ir.expr import FloorDiv, FloorMod, IntImm
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal
from tessel.testing.differential import run_with
from tessel.tir import stmt as S
from tessel.transform import lower
from tessel.transform.hoist_divisions import HoistDivisions


def _hoisted(func):
    return HoistDivisions()(IRModule.from_func(func))[func.name]


def test_a_division_by_a_size_that_inner_loops_repeat_is_bound_before_them():
    @T.prim_func
    def before(a: T.handle, B: T.Buffer((16, 4), "int32")):
        n = T.int32(is_size_var=True)
        A = T.match_buffer(a, (n,), "int32")
        for i in range(16):
            for j in range(4):
                B[i, j] = i // (n + 1) + j + i % (n + 1)

    @T.prim_func
    def expected(a: T.handle, B: T.Buffer((16, 4), "int32")):
        n = T.int32(is_size_var=True)
        A = T.match_buffer(a, (n,), "int32")
        for i in range(16):
            div_0: T.int32 = i // (n + 1)
            div_1: T.int32 = i % (n + 1)
            for j in range(4):
                B[i, j] = div_0 + j + div_1

    after = _hoisted(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)
    args = [np.zeros(3, "int32"), np.zeros((16, 4), "int32")]
    reference = run_with("interpreter", before, args)[1]
    np.testing.assert_array_equal(run_with("c", after, args)[1], reference)
    np.testing.assert_array_equal(run_with("interpreter", after, args)[1], reference)


def test_a_divisor_that_may_be_zero_stays_where_it_is():
    # Hoisted, `i // n` would run where the inner loop does not (n = 0 makes it run nowhere).
    @T.prim_func
    def func(a: T.handle, B: T.Buffer((16,), "int32")):
        n = T.int32(is_size_var=True)
        A = T.match_buffer(a, (n,), "int32")
        for i in range(16):
            for j in range(n):
                B[i] = B[i] + i // n

    assert _hoisted(func) is func


def test_divisions_of_inner_variables_or_of_memory_stay():
    @T.prim_func
    def func(a: T.handle, B: T.Buffer((16, 4), "int32")):
        n = T.int32(is_size_var=True)
        A = T.match_buffer(a, (n,), "int32")
        for i in range(16):
            for j in range(4):
                B[i, j] = (i + j) // (n + 1) + B[i, 0] // (n + 1)

    assert _hoisted(func) is func


def test_a_division_outside_any_inner_loop_stays():
    @T.prim_func
    def func(a: T.handle, B: T.Buffer((16,), "int32")):
        n = T.int32(is_size_var=True)
        A = T.match_buffer(a, (n,), "int32")
        for i in range(16):
            B[i] = i // (n + 1)

    assert _hoisted(func) is func


def test_a_constant_divisor_is_left_to_the_c_compiler():
    @T.prim_func
    def func(B: T.Buffer((16, 4), "int32")):
        for i in range(16):
            for j in range(4):
                B[i, j] = i // 3 + j

    assert _hoisted(func) is func


def _divisions_in_inner_loops(func) -> list:
    """The divisions by a non-constant inside a loop nested in another loop."""
    found = []
    for loop in post_order(func.body):
        if not isinstance(loop, S.For):
            continue
        for inner in post_order(loop.body):
            if isinstance(inner, S.For):
                found += [
                    node
                    for node in post_order(inner.body)
                    if isinstance(node, FloorDiv | FloorMod) and not isinstance(node.b, IntImm)
                ]
    return found


def test_a_symbolic_dense_computes_its_row_tile_once_per_tile_and_stays_right():
    from tessel.schedule.rules import schedule_with_plans

    rows = symbol("rows", 1, 64)
    data = te.placeholder((rows, 24), name="data")
    weight = te.placeholder((16, 24), name="weight")
    func = te.create_prim_func([data, weight, topi.nn.dense(data, weight)])
    scheduled = schedule_with_plans(func).schedule.func
    lowered = lower(scheduled)["main"]
    assert not _divisions_in_inner_loops(lowered)
    lets = [n for n in post_order(lowered.body) if isinstance(n, S.LetStmt)]
    assert any(n.var.name.startswith("div_") for n in lets)
    library = build(scheduled)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 24)).astype("float32")
    for count in (1, 5, 17):
        x = rng.standard_normal((count, 24)).astype("float32")
        out = np.zeros((count, 16), "float32")
        library(x, w, out)
        np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)
