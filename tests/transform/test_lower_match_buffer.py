"""LowerMatchBuffer: a match_buffer becomes a DeclBuffer view sharing the source region's data,
at the region's offset; shapes no view can match are refused; results agree (interpreter, C)."""

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.testing.ir_programs import block, loops, prim_func, root, seq, store
from tessel.tir import interpreter
from tessel.tir.block import Block, MatchBufferRegion
from tessel.tir.buffer import BufferRegion, decl_buffer
from tessel.tir.interpreter import InterpreterError
from tessel.tir.stmt import DeclBuffer, For
from tessel.transform import LoweringError, LowerMatchBuffer


def _lower_match(func):
    return LowerMatchBuffer()(IRModule.from_func(func))[func.name]


def _nodes(func, kind):
    return [n for n in post_order(func.body) if isinstance(n, kind)]


def test_match_buffer_of_a_row_becomes_a_view_at_the_row_offset():
    @T.prim_func
    def before(A: T.Buffer((4, 8), "float32"), S: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("row"):
                T.reads(A[i, 0:8])
                T.writes(S[i])
                row = T.match_buffer(A[i, 0:8], (8,))
                S[i] = T.float32(0)
                for j in range(8):
                    S[i] = S[i] + row[j]

    @T.prim_func
    def expected(A: T.Buffer((4, 8), "float32"), S: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("row"):
                T.reads(A[i, 0:8])
                T.writes(S[i])
                row = T.decl_buffer((8,), data=A.data, strides=(1,), elem_offset=i * 8)
                S[i] = T.float32(0)
                for j in range(8):
                    S[i] = S[i] + row[j]

    after = _lower_match(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_match_buffer_view_shares_the_source_data_with_constant_strides():
    a_buf, sums = decl_buffer((4, 8), "float32", "A"), decl_buffer((4,), "float32", "sums")
    row = decl_buffer((8,), "float32", "row")

    def row_sum(vi):
        return seq(
            store(sums, (vi,), 0),
            loops((8,), lambda j: store(sums, (vi,), sums[vi] + row[j]), names="j"),
        )

    def match_row(vi):
        return [MatchBufferRegion(row, BufferRegion.from_indices(a_buf, (vi, slice(0, 8))))]

    before = prim_func(
        "row_sums",
        (a_buf, sums),
        root(
            loops((4,), lambda i: block("row", "S", (i,), (4,), row_sum, match_buffers=match_row))
        ),
    )
    after = _lower_match(before)
    (view_decl,) = _nodes(after, DeclBuffer)
    view = view_decl.buffer
    (row_block,) = [b for b in _nodes(after, Block) if b.name_hint == "row"]
    assert row_block.match_buffers == ()
    assert row_block.iter_vars
    assert view.data is a_buf.data
    assert structural_equal(view.elem_offset, row_block.iter_vars[0].var * 8)
    assert structural_equal(view.strides, (B.const(1),))
    check_same_results(before, after)


def test_function_without_match_buffers_comes_back_as_the_same_object():
    a_buf = decl_buffer((4,), "int32", "A")
    func = prim_func("plain", (a_buf,), loops((4,), lambda i: store(a_buf, (i,), i)))
    assert _lower_match(func) is func


def _tile_program(shape, region):
    """A block matching `region(vi)` of a 4x4 buffer as a buffer of `shape`, filling it with 1."""
    a_buf = decl_buffer((4, 4), "float32", "A")
    tile = decl_buffer(shape, "float32", "S")
    fill = loops(shape, lambda *idx: store(tile, idx, 1.0), names="klm")

    def match_tile(vi):
        return [MatchBufferRegion(tile, BufferRegion.from_indices(a_buf, region(vi)))]

    return prim_func(
        "tiles",
        (a_buf,),
        root(
            loops(
                (2,),
                lambda i: block("b", "S", (i,), (2,), lambda vi: fill, match_buffers=match_tile),
            )
        ),
    )


def test_match_buffer_dropping_a_dimension_whose_extent_is_not_one_is_rejected():
    func = _tile_program((4,), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    with pytest.raises(
        LoweringError, match=r"`S` \(shape \[4\]\) drops dimension 0 .* extent is 2"
    ) as err:
        _lower_match(func)
    assert err.value.rule == "lower_match_buffer.match-buffer-shape"
    with pytest.raises(InterpreterError, match="cannot match"):
        interpreter.run(func, np.zeros((4, 4), "float32"))


def test_match_buffer_with_a_constant_shape_other_than_the_region_is_rejected():
    func = _tile_program((2, 3), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    with pytest.raises(
        LoweringError, match="extent 3 in dimension 1, but the region's extent there is 2"
    ) as err:
        build(func)
    assert err.value.rule == "lower_match_buffer.match-buffer-shape"


def test_match_buffer_with_more_dimensions_than_its_source_is_rejected():
    func = _tile_program((1, 2, 2), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    with pytest.raises(LoweringError, match="has 3 dimensions but its source region") as err:
        _lower_match(func)
    assert err.value.rule == "lower_match_buffer.match-buffer-rank"


@pytest.mark.parametrize(
    ("shape", "region", "rows", "columns"),
    [
        ((2, 2), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)), slice(None), slice(0, 2)),
        ((2,), lambda vi: (vi * 2, slice(1, 3)), [0, 2], slice(1, 3)),
    ],
    ids=["region-shape", "unit-dimension-dropped"],
)
def test_match_buffer_of_the_region_shape_or_dropping_unit_dimensions_lowers_and_runs(
    shape, region, rows, columns
):
    func = _tile_program(shape, region)
    after = _lower_match(func)
    assert not any(b.match_buffers for b in _nodes(after, Block))
    check_same_results(func, after)
    expected = np.zeros((4, 4), "float32")
    expected[rows, columns] = 1
    result = np.zeros((4, 4), "float32")
    build(func)(result)
    np.testing.assert_array_equal(result, expected)


def test_loops_inside_the_matched_block_keep_their_variables():
    func = _tile_program((2, 2), lambda vi: (slice(vi * 2, vi * 2 + 2), slice(0, 2)))
    after = _lower_match(func)
    before_loops = {loop.loop_var for loop in _nodes(func, For)}
    assert {loop.loop_var for loop in _nodes(after, For)} == before_loops
