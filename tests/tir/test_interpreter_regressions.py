"""Regressions of the reference interpreter (issue 12): a read of allocated memory nothing wrote
is refused (C leaves its value undefined), naming the buffer and the index."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.ir import builders
from tessel.ir.expr import Broadcast, IntImm, Ramp, Var
from tessel.ir.type import PointerType
from tessel.script import tir as T
from tessel.support.dtype import DataType, handle
from tessel.tir.buffer import Buffer, BufferLoad, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.interpreter import InterpreterError, run
from tessel.tir.stmt import Allocate, BufferStore, DeclBuffer, SeqStmt, Stmt


@T.prim_func
def _half_written(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    tmp = T.alloc_buffer((4,), "float32")
    for i in range(2):
        with T.block("write"):
            vi = T.axis.remap("S", [i])
            tmp[vi] = A[vi]
    for i in range(4):
        with T.block("read"):
            vi = T.axis.remap("S", [i])
            B[vi] = tmp[vi]


@T.prim_func
def _integer_half_written(A: T.Buffer((2, 3), "int32"), B: T.Buffer((2, 3), "int32")):
    tmp = T.alloc_buffer((2, 3), "int32")
    for i, j in T.grid(2, 2):
        with T.block("write"):
            vi, vj = T.axis.remap("SS", [i, j])
            tmp[vi, vj] = A[vi, vj]
    for i, j in T.grid(2, 3):
        with T.block("read"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = tmp[vi, vj]


def test_read_of_an_unwritten_float_element_is_refused_not_nan():
    a, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(InterpreterError, match=r"`tmp` at index \[2\] reads memory that nothing"):
        run(_half_written, a, b)


def test_read_of_an_unwritten_integer_element_is_refused_not_int_max():
    a, b = np.ones((2, 3), np.int32), np.zeros((2, 3), np.int32)
    with pytest.raises(InterpreterError, match=r"`tmp` at index \[0, 2\]") as err:
        run(_integer_half_written, a, b)
    assert err.value.rule == "interpreter.uninitialised-read"


def _flat_func(params: list[Buffer], body: Stmt) -> PrimFunc:
    return PrimFunc(tuple(b.data for b in params), body, buffer_map={b.data: b for b in params})


def _allocation(name: str, dtype: str, n: int) -> tuple[Var, Buffer]:
    data = Var(name, handle, PointerType(DataType.of(dtype)))
    return data, decl_buffer((n,), dtype, name, data=data)


def _c(value: int) -> IntImm:
    return builders.const(value, "int32")


def test_vector_load_with_an_unwritten_lane_is_refused_and_a_masked_one_is_not():
    out = decl_buffer((4,), "float32", "out")
    data, tmp = _allocation("tmp", "float32", 4)
    ramp = Ramp(_c(0), _c(1), 4)
    three_lanes = ramp < Broadcast(_c(3), 4)
    writes = [BufferStore(tmp, builders.const(float(k), "float32"), (_c(k),)) for k in range(3)]
    masked = BufferStore(out, BufferLoad(tmp, (ramp,), three_lanes), (ramp,), three_lanes)
    body = Allocate(
        data,
        DataType.of("float32"),
        (_c(4),),
        builders.const(True),
        DeclBuffer(tmp, SeqStmt((*writes, masked))),
    )
    result = np.full(4, 9.0, np.float32)
    run(_flat_func([out], body), result)  # the unwritten lane 3 is disabled
    np.testing.assert_array_equal(result, [0, 1, 2, 9])
    whole = BufferStore(out, BufferLoad(tmp, (ramp,)), (ramp,))
    body = Allocate(
        data,
        DataType.of("float32"),
        (_c(4),),
        builders.const(True),
        DeclBuffer(tmp, SeqStmt((*writes, whole))),
    )
    with pytest.raises(InterpreterError, match=r"`tmp` at index \[\[0, 1, 2, 3\]\] reads memory"):
        run(_flat_func([out], body), result)


def test_reinterpreting_view_reads_only_fully_written_elements():
    """Storage reused with another type: an int32 over four int8 writes is written, one over
    two is not."""
    out = decl_buffer((1,), "int32", "out")
    data, bytes_view = _allocation("tmp", "int8", 8)
    words = decl_buffer((2,), "int32", "words", data=data)
    writes = [BufferStore(bytes_view, builders.const(1, "int8"), (_c(k),)) for k in range(6)]

    def program(word: int) -> PrimFunc:
        read = BufferStore(out, BufferLoad(words, (_c(word),)), (_c(0),))
        inner = DeclBuffer(bytes_view, DeclBuffer(words, SeqStmt((*writes, read))))
        return _flat_func(
            [out], Allocate(data, DataType.of("int8"), (_c(8),), builders.const(True), inner)
        )

    result = np.zeros(1, np.int32)
    run(program(0), result)
    assert result[0] == 0x01010101
    with pytest.raises(InterpreterError, match=r"`words` at index \[1\]"):
        run(program(1), result)


def test_fully_written_allocation_runs_as_before():
    @T.prim_func
    def copy_through(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        tmp = T.alloc_buffer((4,), "float32")
        for i in range(4):
            with T.block("write"):
                vi = T.axis.remap("S", [i])
                tmp[vi] = A[vi] * T.float32(2)
        for i in range(4):
            with T.block("read"):
                vi = T.axis.remap("S", [i])
                B[vi] = tmp[vi]

    a, b = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    run(copy_through, a, b)
    np.testing.assert_array_equal(b, a * 2)
