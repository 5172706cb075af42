"""Structural equality and hashing: alpha-equivalence, and the differences that matter."""

import pytest

from tessel.ir import builders
from tessel.ir.expr import Add, IntImm, Range, Var
from tessel.ir.structural import assert_structural_equal, structural_equal, structural_hash
from tessel.support.dtype import handle, int32
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind


def _scale_func(
    n=8, factor=2.0, dtype="float32", block_name="B", names=("A", "B", "i", "vi")
) -> PrimFunc:
    """B[vi] = A[vi] * factor in a block under a loop; every call builds fresh variables."""
    a_name, b_name, loop_name, iter_name = names
    a, b = decl_buffer((n,), dtype, a_name), decl_buffer((n,), dtype, b_name)
    i, vi = Var(loop_name), Var(iter_name)
    iter_var = IterVar(Range.from_min_extent(0, n), vi, IterVarType.DATA_PAR)
    store = BufferStore(b, a[vi] * builders.const(factor, dtype), (vi,))
    block = Block((iter_var,), (a[vi : vi + 1],), (b[vi : vi + 1],), block_name, store)
    realize = BlockRealize((i,), builders.const(True), block)
    loop = For(i, IntImm(int32, 0), IntImm(int32, n), ForKind.SERIAL, realize)
    params = (Var(a_name, handle), Var(b_name, handle))
    return PrimFunc(params, loop, buffer_map=dict(zip(params, (a, b), strict=True)))


def test_alpha_equivalent_functions_are_equal_and_hash_equal():
    left = _scale_func()
    right = _scale_func(names=("X", "Y", "k", "vk"))
    assert structural_equal(left, right)
    assert structural_hash(left) == structural_hash(right)
    assert_structural_equal(left, right)


def test_a_function_equals_itself():
    func = _scale_func()
    assert structural_equal(func, func)


# Changes of _scale_func that change what it means (names do not).
MEANINGFUL_CHANGES = {
    "constant": {"factor": 3.0},
    "dtype": {"dtype": "float64"},
    "block-name": {"block_name": "C"},
    "buffer-shape": {"n": 16},
}


@pytest.mark.parametrize("changes", MEANINGFUL_CHANGES.values(), ids=MEANINGFUL_CHANGES.keys())
def test_functions_differing_in_meaning_are_not_equal(changes):
    assert not structural_equal(_scale_func(), _scale_func(**changes))


@pytest.mark.parametrize("changes", [{"factor": 3.0}, {"dtype": "float64"}, {"n": 16}])
def test_different_functions_hash_differently(changes):
    assert structural_hash(_scale_func()) != structural_hash(_scale_func(**changes))


def test_constants_of_different_dtypes_are_not_equal():
    assert not structural_equal(IntImm(int32, 1), builders.const(1, "int64"))
    assert structural_equal(IntImm(int32, 1), builders.const(1))


def test_variable_used_inconsistently_is_not_equal():
    x, y = Var("x"), Var("y")
    a, b = Var("a"), Var("b")
    assert not structural_equal(Add(x, x), Add(a, b))
    assert not structural_equal(Add(a, b), Add(x, x))
    assert structural_equal(Add(x, y), Add(a, b))


def test_variables_of_different_dtypes_are_not_equal():
    assert not structural_equal(Var("x", "int32"), Var("x", "int64"))


def test_renaming_a_variable_keeps_the_hash():
    x, y = Var("x"), Var("renamed")
    assert structural_hash(Add(x, IntImm(int32, 1))) == structural_hash(Add(y, IntImm(int32, 1)))


def test_assert_structural_equal_names_the_first_difference_path():
    with pytest.raises(AssertionError, match="first difference at") as err:
        assert_structural_equal(_scale_func(block_name="C"), _scale_func())
    assert ".body.block.name_hint" in str(err.value)


def test_assert_structural_equal_points_into_the_differing_constant():
    with pytest.raises(AssertionError) as err:
        assert_structural_equal(_scale_func(factor=3.0), _scale_func())
    assert ".value.b.value" in str(err.value)
