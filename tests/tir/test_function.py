"""PrimFunc construction checks."""

from __future__ import annotations

import pytest

from tessel.ir.expr import IntImm
from tessel.support.dtype import int32
from tessel.support.errors import IRTypeError
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Evaluate


def test_global_symbol_must_be_a_string():
    body = Evaluate(IntImm(int32, 0))
    assert PrimFunc((), body, attrs={"global_symbol": "kernel"}).name == "kernel"
    with pytest.raises(IRTypeError, match="`global_symbol` of a PrimFunc must be a string") as err:
        PrimFunc((), body, attrs={"global_symbol": 3})
    assert err.value.rule == "prim_func.global-symbol"
