"""te.create_prim_func's argument list: each tensor at most once; printing a function whose
parameters share one buffer (which create_prim_func no longer builds) does not fail."""

import pytest

from tessel import te
from tessel.ir.expr import Var
from tessel.support.dtype import handle
from tessel.support.errors import UserError
from tessel.tir.function import PrimFunc


def _add_one():
    A = te.placeholder((3,), name="A")
    S = te.compute((3,), lambda i: A[i] + 1.0, name="S")
    return A, S


def test_a_repeated_output_tensor_is_refused_with_a_user_error():
    A, S = _add_one()
    with pytest.raises(UserError, match="arguments 1 and 2 are the same tensor `S`") as info:
        te.create_prim_func([A, S, S])
    assert info.value.rule == "te.create_prim_func-repeated-arg"


def test_a_repeated_input_tensor_is_refused_with_a_user_error():
    A, S = _add_one()
    with pytest.raises(UserError, match="arguments 0 and 1 are the same tensor `A`"):
        te.create_prim_func([A, A, S])


def test_a_repeated_scalar_var_is_refused_with_a_user_error():
    A, S = _add_one()
    n = te.var("n")
    with pytest.raises(UserError, match="arguments 2 and 3 are the same var `n`"):
        te.create_prim_func([A, S, n, n])


def test_printing_two_parameters_over_one_buffer_does_not_raise():
    A, S = _add_one()
    func = te.create_prim_func([A, S])
    extra = Var("S_alias", handle)
    buffer = func.buffer_map[func.params[1]]
    aliased = PrimFunc(
        (*func.params, extra), func.body, None, {**dict(func.buffer_map), extra: buffer}, func.attrs
    )
    text = aliased.script()
    assert "data=S.data" in text
