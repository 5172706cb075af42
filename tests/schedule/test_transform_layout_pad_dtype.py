"""transform_layout takes a Python number as the pad value only where TVM does: an int on an
integer buffer, a float on a float buffer; otherwise TVM reads it as int32/float32 and refuses
the mismatch, and so does Tessel, leaving the schedule unchanged."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_layout_schedule


@T.prim_func
def scale_14(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,), "float32")
    for i in range(14):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi]


@T.prim_func
def copy_int_14(A: T.Buffer((14,), "int32"), C: T.Buffer((14,), "int32")):
    for i in range(14):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi]


@pytest.mark.parametrize(
    ("func", "pad_value"), [(scale_14, 0), (scale_14, True), (copy_int_14, 0.0)]
)
def test_transform_layout_refuses_a_python_number_of_another_kind(func, pad_value):
    sch = Schedule(func)
    buffer = "B" if func is scale_14 else "A"
    with pytest.raises(ScheduleError) as err:
        sch.transform_layout("block", buffer, lambda i: [i // 4, i % 4], pad_value=pad_value)
    assert err.value.rule == "transform_layout.pad-value-dtype"
    assert_structural_equal(sch.func, func)


def test_transform_layout_takes_a_float_pad_value_on_a_float_buffer():
    @T.prim_func
    def expected(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
        B = T.alloc_buffer((4, 4), "float32")
        for i, j in T.grid(4, 4):
            with T.block("block"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(
                    vi == 3 and 2 <= vj, T.float32(0), A[vi * 4 + vj] * T.float32(2)
                )
        for i in range(14):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // 4, vi % 4]

    check_layout_schedule(
        scale_14,
        lambda sch: sch.transform_layout("block", "B", lambda i: [i // 4, i % 4], pad_value=0.0),
        expected,
    )
