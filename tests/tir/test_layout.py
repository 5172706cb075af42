"""Row-major layout arithmetic: one definition for ints (interpreter) and expressions (lowering)."""

from __future__ import annotations

from tessel.ir import builders as B
from tessel.ir.expr import Var
from tessel.ir.structural import structural_equal
from tessel.support.dtype import int32, int64
from tessel.tir.layout import extent_product, row_major_strides


def test_row_major_strides_of_ints():
    assert row_major_strides((2, 3, 4), 1) == (12, 4, 1)
    assert row_major_strides((), 1) == ()


def test_row_major_strides_of_expressions():
    n, m = Var("n"), Var("m")
    strides = row_major_strides((n, m, B.const(4)), B.const(1))
    assert structural_equal(strides, (B.const(4) * m, B.const(4), B.const(1)))


def test_extent_product_in_the_first_extent_dtype():
    n = Var("n", int64)
    assert structural_equal(extent_product((n, B.const(3, int64))), n * 3)
    empty = extent_product(())
    assert B.is_const_int(empty, 1)
    assert empty.dtype == int32
