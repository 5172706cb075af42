"""LowerBlocks: blocks become loop-level code; results agree before and after (interpreter, C)."""

from __future__ import annotations

import numpy as np
import pytest
from tessel.testing.ir_programs import block, loops, matmul, prim_func, root, seq, store

from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import EQ, Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.structural import structural_equal
from tessel.tir import interpreter
from tessel.tir.interpreter import InterpreterError
from tessel.tir.block import Block, BlockRealize, MatchBufferRegion
from tessel.tir.buffer import BufferRegion, decl_buffer
from tessel.tir.stmt import Allocate, DeclBuffer, For, IfThenElse
from tessel.transform import LowerBlocks, LoweringError

RNG = np.random.default_rng(3)


def _lower(func):
    return LowerBlocks()(IRModule.from_func(func))[func.name]


def _nodes(func, kind):
    return [n for n in post_order(func.body) if isinstance(n, kind)]


def _run_all(before, after, make_args):
    """Run `before` and `after` in the interpreter and compiled; return the four result sets."""
    results = []
    for func in (before, after):
        args = make_args()
        interpreter.run(func, *args)
        results.append(args)
        args = make_args()
        build(func)(*args)
        results.append(args)
    return results


def test_matmul_init_becomes_a_guard_on_the_first_reduction_iteration():
    before = matmul(16)
    after = _lower(before)
    assert not _nodes(after, Block | BlockRealize)
    (guard,) = _nodes(after, IfThenElse)
    k_loop = _nodes(after, For)[0]  # post order: the innermost loop comes first
    assert isinstance(guard.condition, EQ) and guard.condition.a is k_loop.loop_var
    assert B.is_const_int(guard.condition.b, 0)

    a, b = RNG.standard_normal((16, 16)).astype("float32"), RNG.standard_normal((16, 16)).astype("float32")
    for _, _, c in _run_all(before, after, lambda: (a, b, np.full((16, 16), 7, "float32"))):
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_block_predicate_becomes_if_then_else_and_iterators_are_substituted():
    a_buf, b_buf = decl_buffer((10,), "float32", "A"), decl_buffer((10,), "float32", "B")
    before = prim_func("tail", (a_buf, b_buf), root(loops((3, 4), lambda i, j: block(
        "S", "S", (i * 4 + j,), (10,), lambda v: store(b_buf, (v,), a_buf[v] + 1.0),
        predicate=B.lt(i * 4 + j, 10)))))  # fmt: skip
    after = _lower(before)
    (guard,) = _nodes(after, IfThenElse)
    i, j = (loop.loop_var for loop in _nodes(after, For)[::-1])
    assert structural_equal(guard.condition, B.lt(i * 4 + j, 10))
    block_vars = {v for n in post_order(before.body) if isinstance(n, Block) for v in (iv.var for iv in n.iter_vars)}
    assert not block_vars & {n for n in post_order(after.body) if isinstance(n, Var)}
    a = RNG.standard_normal(10).astype("float32")
    for _, b in _run_all(before, after, lambda: (a, np.zeros(10, "float32"))):
        np.testing.assert_array_equal(b, a + 1)


def test_root_alloc_buffers_become_allocate_and_decl_buffer_around_the_body():
    a_buf, out = decl_buffer((8,), "float32", "A"), decl_buffer((8,), "float32", "out")
    temp = decl_buffer((8,), "float32", "temp")
    body = seq(
        loops((8,), lambda i: block("t", "S", (i,), (8,), lambda v: store(temp, (v,), a_buf[v] * 2.0))),
        loops((8,), lambda i: block("o", "S", (i,), (8,), lambda v: store(out, (v,), temp[v] + 1.0))),
    )
    before = prim_func("two_stage", (a_buf, out), root(body, (temp,)))
    after = _lower(before)
    assert isinstance(after.body, Allocate) and after.body.buffer_var is temp.data
    assert isinstance(after.body.body, DeclBuffer) and after.body.body.buffer is temp
    a = RNG.standard_normal(8).astype("float32")
    for _, result in _run_all(before, after, lambda: (a, np.zeros(8, "float32"))):
        np.testing.assert_array_equal(result, a * 2 + 1)


def test_match_buffer_becomes_a_view_sharing_the_source_data_at_the_region_offset():
    a_buf, sums = decl_buffer((4, 8), "float32", "A"), decl_buffer((4,), "float32", "sums")
    row = decl_buffer((8,), "float32", "row")

    def row_sum(vi):
        return seq(store(sums, (vi,), 0), loops((8,), lambda j: store(sums, (vi,), sums[vi] + row[j]), names="j"))

    before = prim_func("row_sums", (a_buf, sums), root(loops((4,), lambda i: block(
        "row", "S", (i,), (4,), row_sum,
        match_buffers=lambda vi: [MatchBufferRegion(row, BufferRegion.from_indices(a_buf, (vi, slice(0, 8))))]))))  # fmt: skip
    after = _lower(before)
    (view_decl,) = _nodes(after, DeclBuffer)
    view = view_decl.buffer
    i = _nodes(after, For)[-1].loop_var  # the outer loop comes last in post order
    assert view.data is a_buf.data
    assert structural_equal(view.elem_offset, i * 8)
    assert structural_equal(view.strides, (B.const(1),))
    a = RNG.standard_normal((4, 8)).astype("float32")
    for _, result in _run_all(before, after, lambda: (a, np.zeros(4, "float32"))):
        np.testing.assert_allclose(result, a.sum(1), rtol=1e-5)


def test_function_without_blocks_comes_back_unchanged():
    a_buf = decl_buffer((4,), "int32", "A")
    func = prim_func("plain", (a_buf,), loops((4,), lambda i: store(a_buf, (i,), i)))
    assert _lower(func) is func


def test_block_with_iterators_but_no_realize_is_a_lowering_error():
    a_buf = decl_buffer((4,), "int32", "A")
    realize = block("lonely", "S", (B.const(0),), (4,), lambda v: store(a_buf, (v,), 1))
    func = prim_func("bad", (a_buf,), realize.block)
    with pytest.raises(LoweringError, match="`lonely` has iterators") as err:
        _lower(func)
    assert err.value.rule == "lower_blocks.unbound-iterators"


def test_alloc_buffer_allocation_covers_its_elem_offset():
    a_buf, out = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "out")
    temp = decl_buffer((4,), "float32", "temp", elem_offset=1000)
    body = seq(
        loops((4,), lambda i: block("t", "S", (i,), (4,), lambda v: store(temp, (v,), a_buf[v] * 2.0))),
        loops((4,), lambda i: block("o", "S", (i,), (4,), lambda v: store(out, (v,), temp[v] + 1.0))),
    )
    before = prim_func("offset", (a_buf, out), root(body, (temp,)))
    after = _lower(before)
    assert isinstance(after.body, Allocate)
    (size,) = after.body.extents
    assert B.is_const_int(size, 1004)  # the view reaches elements 1000..1003
    a = RNG.standard_normal(4).astype("float32")
    for _, result in _run_all(before, after, lambda: (a, np.zeros(4, "float32"))):
        np.testing.assert_array_equal(result, a * 2 + 1)


def _tile_program(shape, region):
    """A block matching `region(vi)` of a 4x4 buffer as a buffer of `shape`, filling it with 1."""
    a_buf = decl_buffer((4, 4), "float32", "A")
    tile = decl_buffer(shape, "float32", "S")
    fill = loops(shape, lambda *idx: store(tile, idx, 1.0), names="kl")
    return prim_func("tiles", (a_buf,), root(loops((2,), lambda i: block(
        "b", "S", (i,), (2,), lambda vi: fill,
        match_buffers=lambda vi: [MatchBufferRegion(tile, BufferRegion.from_indices(a_buf, region(vi)))]))))  # fmt: skip


def test_match_buffer_dropping_a_dimension_whose_extent_is_not_one_is_rejected():
    func = _tile_program((4,), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    with pytest.raises(LoweringError, match=r"`S` \(shape \[4\]\) drops dimension 0 .* extent is 2") as err:
        _lower(func)
    assert err.value.rule == "lower_blocks.match-buffer-shape"
    with pytest.raises(InterpreterError, match="cannot match"):
        interpreter.run(func, np.zeros((4, 4), "float32"))


def test_match_buffer_with_a_constant_shape_other_than_the_region_is_rejected():
    func = _tile_program((2, 3), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    with pytest.raises(LoweringError, match="extent 3 in dimension 1, but the region's extent there is 2") as err:
        build(func)
    assert err.value.rule == "lower_blocks.match-buffer-shape"


def test_match_buffer_of_the_region_shape_or_dropping_unit_dimensions_lowers_and_runs():
    full = _tile_program((2, 2), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    row = _tile_program((2,), lambda vi: (vi * 2, slice(1, 3)))
    expected_full = np.zeros((4, 4), "float32")
    expected_full[:, :2] = 1
    expected_row = np.zeros((4, 4), "float32")
    expected_row[[0, 2], 1:3] = 1
    for func, expected in ((full, expected_full), (row, expected_row)):
        after = _lower(func)
        for (result,) in _run_all(func, after, lambda: (np.zeros((4, 4), "float32"),)):
            np.testing.assert_array_equal(result, expected)
