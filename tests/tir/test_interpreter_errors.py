"""What the interpreter refuses, with a message naming the culprit: failed asserts, violated
assumptions, out-of-bounds accesses, wrong arguments, inconsistent symbolic shapes."""

from __future__ import annotations

import numpy as np
import pytest
from test_interpreter_programs import buffer, const, grid, matmul, prim_func, store

from tessel.ir import builders
from tessel.ir.expr import Call, Op, StringImm, Var
from tessel.support.dtype import DataType
from tessel.tir import builtin
from tessel.tir.interpreter import InterpreterError, run
from tessel.tir.stmt import AssertStmt, Evaluate, For, ForKind, SeqStmt


def _scale_by_n():
    """A[i] = A[i] * n for i < n: a symbolic shape n shared with B."""
    n = Var("n")
    a, b = buffer("A", (n,)), buffer("B", (n,))
    body = grid((n,), lambda i: store(b, (i,), a[i] * builders.cast(n, "float32")))
    return prim_func([a, b], body)


def test_symbolic_shape_is_bound_from_the_first_array():
    a, b = np.arange(7, dtype=np.float32), np.zeros(7, np.float32)
    run(_scale_by_n(), a, b)
    np.testing.assert_array_equal(b, a * 7)


def test_symbolic_shape_mismatch_between_arguments_names_the_parameter():
    with pytest.raises(InterpreterError, match=r"argument `B`: dimension 0 .* must be 7") as err:
        run(_scale_by_n(), np.zeros(7, np.float32), np.zeros(5, np.float32))
    assert err.value.rule == "interpreter.argument"


def test_wrong_shape_names_the_parameter():
    a, c = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    b = np.zeros((4, 5), np.float32)
    with pytest.raises(InterpreterError, match=r"`B`: dimension 1 of buffer `B` must be 4"):
        run(matmul(4), a, b, c)


def test_wrong_dtype_names_the_parameter():
    a, c = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    with pytest.raises(InterpreterError, match=r"`B`: expected dtype float32, got float64"):
        run(matmul(4), a, np.zeros((4, 4)), c)


def test_wrong_rank_names_the_parameter():
    a, c = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    with pytest.raises(InterpreterError, match=r"argument `B`: expected rank 2"):
        run(matmul(4), a, np.zeros(16, np.float32), c)


def test_wrong_number_of_arguments_lists_the_parameters():
    with pytest.raises(InterpreterError, match=r"takes 3 arguments \(A, B, C\), got 2"):
        run(matmul(4), np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32))


def test_non_contiguous_array_for_a_compact_buffer_is_refused():
    a = np.zeros((4, 8), np.float32)[:, ::2]
    with pytest.raises(InterpreterError, match=r"argument `A`: the array must be C-contiguous"):
        run(matmul(4), a, np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32))


def test_scalar_argument_out_of_range_is_refused():
    n = Var("n", "int8")
    func = prim_func([n], Evaluate(const(0)))
    with pytest.raises(InterpreterError, match=r"argument `n`: 300 does not fit in int8"):
        run(func, 300)


def test_out_of_bounds_store_names_buffer_and_index():
    a = buffer("A", (4, 3))
    func = prim_func([a], grid((4, 4), lambda i, j: store(a, (i, j), 1.0)))
    message = r"store to `A` at index \[0, 3\] is outside its shape \[4, 3\]"
    with pytest.raises(InterpreterError, match=message) as err:
        run(func, np.zeros((4, 3), np.float32))
    assert err.value.rule == "interpreter.out-of-bounds"


def test_negative_index_is_out_of_bounds_not_wrapped():
    a, b = buffer("A", (4,)), buffer("B", (4,))
    func = prim_func([a, b], grid((4,), lambda i: store(b, (i,), a[i - 1])))
    with pytest.raises(InterpreterError, match=r"load from `A` at index \[-1\]"):
        run(func, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_failed_assert_raises_with_its_message():
    n = Var("n")
    body = AssertStmt(n > 0, StringImm("n must be positive"), Evaluate(const(0)))
    func = prim_func([n], body)
    run(func, 1)
    with pytest.raises(InterpreterError, match="assertion failed: n must be positive") as err:
        run(func, 0)
    assert err.value.rule == "interpreter.assert"


def test_violated_assume_raises():
    a = buffer("A", (4,))

    def padding_is_zero(i):
        return builders.logical_or(i < 3, builders.eq(a[i], const(0.0)))

    body = grid((4,), lambda i: Evaluate(builtin.assume(padding_is_zero(i))))
    func = prim_func([a], body)
    run(func, np.array([1, 2, 3, 0], np.float32))  # the padding element is 0: constraint holds
    with pytest.raises(InterpreterError, match=r"T\.assume") as err:
        run(func, np.array([1, 2, 3, 4], np.float32))
    assert err.value.rule == "interpreter.assume"


def test_call_extern_fails_when_reached():
    a = buffer("A", (1,))
    call = builtin.call_extern("float32", "my_kernel", const(1.0))
    func = prim_func([a], store(a, (0,), call))
    with pytest.raises(InterpreterError, match="external function `my_kernel`"):
        run(func, np.zeros(1, np.float32))


def test_unknown_builtin_fails_when_reached():
    func = prim_func([], Evaluate(Call(DataType.of("int32"), Op("tir.mystery"), ())))
    with pytest.raises(InterpreterError, match="does not know the builtin `tir.mystery`"):
        run(func)


def test_buffer_whose_data_is_never_allocated_is_refused():
    a, orphan = buffer("A", (2,)), buffer("orphan", (2,))
    func = prim_func([a], store(a, (0,), orphan[0]))
    with pytest.raises(InterpreterError, match=r"`orphan` is used, but .* never allocated"):
        run(func, np.zeros(2, np.float32))


def test_variable_read_outside_its_loop_raises():
    a = buffer("A", (4,))
    i = Var("i")
    fill = For(i, const(0), const(4), ForKind.SERIAL, store(a, (i,), 1.0))
    body = SeqStmt((fill, store(a, (0,), a[i])))
    func = prim_func([a], body)
    run(func, np.zeros(4, np.float32))  # `i` keeps its last value (no scope check at run time)
    j = Var("j")
    with pytest.raises(InterpreterError, match="variable `j` is read outside"):
        run(prim_func([a], store(a, (j,), 1.0)), np.zeros(4, np.float32))
