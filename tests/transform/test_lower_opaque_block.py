"""LowerOpaqueBlock: opaque blocks become their code (predicate → IfThenElse, alloc_buffers →
Allocate + DeclBuffer); `pragma_*` annotations become AttrStmts, other loop annotations stay on the
For, and what cannot be kept is dropped with a recorded reason, never a failure."""

import numpy as np
import pytest

import tessel
from tessel.ir import builders as B
from tessel.ir.expr import StringImm
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.testing.ir_programs import block, loops, prim_func, root, seq, store
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import Allocate, AttrStmt, DeclBuffer, For
from tessel.transform import (
    ConvertBlocksToOpaque,
    LoweringError,
    LowerInitBlock,
    LowerMatchBuffer,
    LowerOpaqueBlock,
)
from tessel.transform.lower_opaque_block import DROPPED_ANNOTATIONS_ATTR


def _lower_opaque(func, **options):
    return LowerOpaqueBlock(**options)(IRModule.from_func(func))[func.name]


def _lower_blocks(func, **options):
    """Every block pass in pipeline order, so a test can start from a block-level function."""
    mod = IRModule.from_func(func)
    for pass_ in (
        LowerInitBlock(),
        ConvertBlocksToOpaque(),
        LowerMatchBuffer(),
        LowerOpaqueBlock(**options),
    ):
        mod = pass_(mod)
    return mod[func.name]


def _nodes(func, kind):
    return [n for n in post_order(func.body) if isinstance(n, kind)]


def test_predicate_becomes_if_and_alloc_buffer_becomes_allocate_and_decl_buffer():
    @T.prim_func
    def before(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        for io in range(3):
            with T.block("tile"):
                T.reads(A[io * 4 : io * 4 + 4])
                T.writes(C[io * 4 : io * 4 + 4])
                tmp = T.alloc_buffer((4,))
                for ii in range(4):
                    with T.block("inner"):
                        T.where(io * 4 + ii < 10)
                        T.reads(A[io * 4 + ii])
                        T.writes(tmp[ii], C[io * 4 + ii])
                        tmp[ii] = A[io * 4 + ii] * T.float32(2)
                        C[io * 4 + ii] = tmp[ii] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        for io in range(3):
            tmp = T.allocate([4], "float32", "global")  # Allocate + DeclBuffer
            for ii in range(4):
                if io * 4 + ii < 10:
                    tmp[ii] = A[io * 4 + ii] * T.float32(2)
                    C[io * 4 + ii] = tmp[ii] + T.float32(1)

    after = _lower_opaque(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_root_alloc_buffers_live_for_the_whole_function():
    a_buf, out = decl_buffer((8,), "float32", "A"), decl_buffer((8,), "float32", "out")
    temp = decl_buffer((8,), "float32", "temp")
    body = seq(
        loops(
            (8,), lambda i: block("t", "S", (i,), (8,), lambda v: store(temp, (v,), a_buf[v] * 2.0))
        ),
        loops(
            (8,), lambda i: block("o", "S", (i,), (8,), lambda v: store(out, (v,), temp[v] + 1.0))
        ),
    )
    before = prim_func("two_stage", (a_buf, out), root(body, (temp,)))
    after = _lower_blocks(before)
    assert isinstance(after.body, Allocate)
    assert after.body.buffer_var is temp.data
    assert isinstance(after.body.body, DeclBuffer)
    assert after.body.body.buffer is temp
    check_same_results(before, after)


def test_allocation_covers_the_alloc_buffers_elem_offset():
    a_buf, out = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "out")
    temp = decl_buffer((4,), "float32", "temp", elem_offset=1000)
    body = seq(
        loops(
            (4,), lambda i: block("t", "S", (i,), (4,), lambda v: store(temp, (v,), a_buf[v] * 2.0))
        ),
        loops(
            (4,), lambda i: block("o", "S", (i,), (4,), lambda v: store(out, (v,), temp[v] + 1.0))
        ),
    )
    before = prim_func("offset", (a_buf, out), root(body, (temp,)))
    after = _lower_blocks(before)
    (size,) = after.body.extents
    assert B.is_const_int(size, 1004)  # the view reaches elements 1000..1003
    check_same_results(before, after)


def test_function_without_blocks_comes_back_as_the_same_object():
    a_buf = decl_buffer((4,), "int32", "A")
    func = prim_func("plain", (a_buf,), loops((4,), lambda i: store(a_buf, (i,), i)))
    assert _lower_opaque(func) is func


def test_blocks_the_earlier_block_passes_left_are_refused_naming_the_pass_to_run():
    @T.prim_func
    def with_iterators(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A"):
                vi = T.axis.spatial(8, i)
                A[vi] = T.float32(1)

    @T.prim_func
    def with_init(A: T.Buffer((8,), "float32")):
        with T.block("A"):
            with T.init():
                A[0] = T.float32(0)
            A[0] = A[0] + T.float32(1)

    @T.prim_func
    def with_match_buffer(A: T.Buffer((8,), "float32")):
        with T.block("A"):
            view = T.match_buffer(A[0:4], (4,))
            view[0] = T.float32(1)

    cases = [
        (with_iterators, "has iterators", "not-opaque", "ConvertBlocksToOpaque"),
        (with_init, "has an init", "init-not-lowered", "LowerInitBlock"),
        (with_match_buffer, "has match_buffers", "match-buffer-not-lowered", "LowerMatchBuffer"),
    ]
    for func, what, rule, earlier in cases:
        with pytest.raises(LoweringError, match=f"block `A` still {what}") as err:
            _lower_opaque(func)
        assert err.value.rule == f"lower_opaque_block.{rule}"
        assert f"run {earlier} first" in err.value.hint


# -- annotations -------------------------------------------------------------------------------

PRAGMAS = """
@T.prim_func
def pragmas(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"), n: T.int32):
    for i in T.serial(8, annotations={"pragma_unroll_explicit": 1, "pragma_note": "fast",
                                      "pragma_auto_unroll_max_step": n * 2, "meta": [4, 2]}):
        for j in T.serial(4, annotations={"pragma_tiles": [1, 2], "tiles": [1, 2]}):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"pragma_block": 3, "hint": {"x": [1]}, "pragma_bad": [0]})
                B[vi, vj] = A[vi, vj] + T.float32(1)
"""


def test_expression_and_string_pragmas_become_attr_stmts_inside_the_loop_in_key_order():
    after = _lower_blocks(parse(PRAGMAS))
    loop = after.body
    assert isinstance(loop, For)
    assert dict(loop.annotations) == {"meta": (4, 2)}
    inner, keys = loop.body, []
    while isinstance(inner, AttrStmt) and not isinstance(inner.node, str):
        assert inner.node is loop.loop_var  # about this loop, with its variable in scope
        keys.append(inner.attr_key)
        inner = inner.body
    assert keys == ["pragma_auto_unroll_max_step", "pragma_note", "pragma_unroll_explicit"]
    attrs = {a.attr_key: a for a in _nodes(after, AttrStmt)}
    assert isinstance(attrs["pragma_note"].value, StringImm)
    assert attrs["pragma_note"].value.value == "fast"
    assert B.is_const_int(attrs["pragma_unroll_explicit"].value, 1)
    assert str(attrs["pragma_auto_unroll_max_step"].value) == "n * 2"


def test_lowered_loop_pragmas_print_and_parse_back():
    after = _lower_blocks(parse(PRAGMAS))
    assert_structural_equal(parse(after.script()), after)


def test_block_pragma_becomes_an_attr_stmt_named_after_the_block():
    after = _lower_blocks(parse(PRAGMAS))
    (block_attr,) = [a for a in _nodes(after, AttrStmt) if isinstance(a.node, str)]
    assert (block_attr.node, block_attr.attr_key) == ("B", "pragma_block")
    assert B.is_const_int(block_attr.value, 3)


def test_list_valued_pragmas_and_block_hints_are_dropped_with_the_reason_recorded():
    after = _lower_blocks(parse(PRAGMAS))
    inner = [loop for loop in _nodes(after, For) if loop.loop_var.name == "j"][0]
    assert dict(inner.annotations) == {"tiles": (1, 2)}  # a non-pragma list stays on the For
    dropped = after.attrs[DROPPED_ANNOTATIONS_ATTR]
    assert [entry.split(":")[0] for entry in dropped] == ["loop `j`", "block `B`", "block `B`"]
    assert dropped[0].startswith("loop `j`: pragma_tiles=[1, 2]: a pragma becomes an AttrStmt")
    assert dropped[1].startswith("block `B`: hint={'x': [1]}: block annotations are schedule hints")
    assert dropped[2].startswith("block `B`: pragma_bad=[0]: a pragma becomes an AttrStmt")
    assert "pragma_tiles=[1, 2]" in after.script()  # users see it in the printed IR


def test_keep_on_loop_keeps_a_list_valued_pragma_that_a_later_pass_reads():
    after = _lower_blocks(parse(PRAGMAS), keep_on_loop=frozenset({"pragma_tiles"}))
    inner = [loop for loop in _nodes(after, For) if loop.loop_var.name == "j"][0]
    assert dict(inner.annotations) == {"pragma_tiles": (1, 2), "tiles": (1, 2)}
    assert not any("pragma_tiles" in entry for entry in after.attrs[DROPPED_ANNOTATIONS_ATTR])


def test_annotated_function_lowers_builds_and_matches_numpy():
    func = parse(PRAGMAS)
    check_same_results(func, _lower_blocks(func), scalars={"n": 8})
    a, b = np.arange(32, dtype="float32").reshape(8, 4), np.zeros((8, 4), "float32")
    tessel.build(func)(a, b, 8)
    np.testing.assert_array_equal(b, a + 1)


def test_dropped_annotations_add_to_an_existing_record():
    func = parse(PRAGMAS)
    earlier = ("loop `k`: pragma_x=[1]: recorded by an earlier lowering",)
    func = with_changes(func, attrs=func.attrs.set(DROPPED_ANNOTATIONS_ATTR, earlier))
    dropped = _lower_blocks(func).attrs[DROPPED_ANNOTATIONS_ATTR]
    assert dropped[0] == earlier[0]
    assert len(dropped) == 4
