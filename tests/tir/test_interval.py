"""constant_extent: region extents written `stop - start` are constants once like terms cancel."""

from __future__ import annotations

import pytest

from tessel.ir import builders as B
from tessel.ir.expr import Sub, Var
from tessel.tir.analysis.interval import constant_extent


def test_constant_extent_of_constants_and_cancelling_differences():
    vi = Var("vi")
    assert constant_extent(B.const(4)) == 4
    assert constant_extent(Sub(vi * 2 + 2, vi * 2)) == 2
    assert constant_extent(Sub(vi + 5, vi + 1)) == 4
    assert constant_extent(Sub(B.const(7), B.const(3))) == 4


@pytest.mark.parametrize("make", [lambda v, w: v, lambda v, w: Sub(v + 2, w), lambda v, w: v * 2])
def test_constant_extent_is_none_when_unknown(make):
    assert constant_extent(make(Var("v"), Var("w"))) is None
