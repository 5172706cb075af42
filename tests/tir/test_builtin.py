"""Builtins: T.undef() recognised through casts, and call_extern names checked on construction."""

from __future__ import annotations

import pytest

from tessel.ir.expr import Cast, Var
from tessel.support.dtype import float32, int64
from tessel.support.errors import IRTypeError
from tessel.tir import builtin


def test_is_undef_sees_through_casts():
    undef = builtin.undef("int32")
    assert builtin.is_undef(undef)
    assert builtin.is_undef(Cast(float32, undef))
    assert builtin.is_undef(Cast(float32, Cast(int64, undef)))
    assert not builtin.is_undef(Cast(float32, Var("x")))
    assert not builtin.is_undef(builtin.likely(Var("b", "bool")))


def test_call_extern_accepts_c_identifiers():
    call = builtin.call_extern("int32", "my_helper2", Var("x"))
    assert call.args[0].value == "my_helper2"


@pytest.mark.parametrize("name", ["return", "int", "é", "a b", "1f", "", 3, None])
def test_call_extern_rejects_names_that_are_no_c_function(name):
    with pytest.raises(IRTypeError, match="call_extern needs the name of a C function") as err:
        builtin.call_extern("int32", name)
    assert err.value.rule == "call_extern.name"
