"""ConvertBlocksToOpaque: block iterators become their bound values everywhere in the block, which
stays as an opaque block; results agree before and after (interpreter, C)."""

import pytest

from tessel.ir import builders as B
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.testing.ir_programs import block, prim_func, store
from tessel.tir.buffer import decl_buffer
from tessel.transform import ConvertBlocksToOpaque, LoweringError


def _opaque(func):
    return ConvertBlocksToOpaque()(IRModule.from_func(func))[func.name]


def _assert_converts_to(before, expected):
    after = _opaque(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_iterators_in_body_and_regions_become_loop_expressions():
    @T.prim_func
    def before(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("C"):
                vi = T.axis.spatial(8, i * 2 + 1)
                vj = T.axis.spatial(8, j)
                T.reads(A[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def expected(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("C"):
                T.reads(A[i * 2 + 1, j])
                T.writes(C[i * 2 + 1, j])
                C[i * 2 + 1, j] = A[i * 2 + 1, j] * T.float32(2)

    _assert_converts_to(before, expected)


def test_predicate_stays_and_nested_blocks_see_the_outer_bindings():
    @T.prim_func
    def before(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        for io in range(3):
            with T.block("outer"):
                vo = T.axis.spatial(3, io)
                T.reads(A[vo * 4 : vo * 4 + 4])
                T.writes(C[vo * 4 : vo * 4 + 4])
                for ii in range(4):
                    with T.block("inner"):
                        vi = T.axis.spatial(10, vo * 4 + ii)
                        T.where(io * 4 + ii < 10)
                        T.reads(A[vi])
                        T.writes(C[vi])
                        C[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
        for io in range(3):
            with T.block("outer"):
                T.reads(A[io * 4 : io * 4 + 4])
                T.writes(C[io * 4 : io * 4 + 4])
                for ii in range(4):
                    with T.block("inner"):
                        T.where(io * 4 + ii < 10)
                        T.reads(A[io * 4 + ii])
                        T.writes(C[io * 4 + ii])
                        C[io * 4 + ii] = A[io * 4 + ii] + T.float32(1)

    _assert_converts_to(before, expected)


def test_function_with_opaque_blocks_only_comes_back_as_the_same_object():
    @T.prim_func
    def func(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A"):
                A[i] = T.float32(1)

    assert _opaque(func) is func


def test_block_with_an_init_is_refused_until_the_init_is_lowered():
    @T.prim_func
    def func(A: T.Buffer((8,), "float32"), S: T.Buffer((1,), "float32")):
        for k in range(8):
            with T.block("S"):
                vk = T.axis.reduce(8, k)
                with T.init():
                    S[0] = T.float32(0)
                S[0] = S[0] + A[vk]

    with pytest.raises(LoweringError, match="`S` still has an init") as err:
        _opaque(func)
    assert err.value.rule == "convert_blocks_to_opaque.init-not-lowered"
    assert err.value.hint == "run LowerInitBlock first"


def test_block_with_iterators_but_no_realize_is_a_lowering_error():
    a_buf = decl_buffer((4,), "int32", "A")
    realize = block("lonely", "S", (B.const(0),), (4,), lambda v: store(a_buf, (v,), 1))
    func = prim_func("bad", (a_buf,), realize.block)
    with pytest.raises(LoweringError, match="`lonely` has iterators") as err:
        _opaque(func)
    assert err.value.rule == "convert_blocks_to_opaque.unbound-iterators"
