"""Fuzzer regression (seed 7, case 724): reverse_compute_at under a loop whose producer writes
through a strided layout, so that one iteration's writes have holes the consumer would read."""

import pytest

from tessel import te
from tessel.ir.target import Target
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing.fuzz.case import check_result


def _product_then_column_max():
    """T2 = A0 * A1 over (1, 2, 16), read by a column max over the middle axis (T4)."""
    a0 = te.placeholder((1, 2, 16), "float32", name="A0")
    a1 = te.placeholder((1, 2, 16), "float32", name="A1")
    t2 = te.compute((1, 2, 16), lambda i, j, k: a0[i, j, k] * a1[i, j, k], name="T2")
    r = te.reduce_axis((0, 2), name="r")
    t4 = te.compute((1, 16), lambda i, k: te.max(t2[i, r, k], axis=r), name="T4")
    return te.create_prim_func([a0, a1, t4])


def _flattened(order):
    """T2 stored flat as (1, 32), index j * 16 + k, its loops in `order` (of i, j, k), and a
    local copy of it feeding T4."""
    func = _product_then_column_max()
    sch = Schedule(func)
    t2 = sch.get_block("T2")
    sch.transform_layout(t2, ("write", 0), lambda i, j, k: (i, j * 16 + k), pad_value=T.float32(0))
    loops = sch.get_loops(t2)
    sch.reorder(*(loops[n] for n in order))
    sch.cache_read(sch.get_block("T4"), 0, "local")
    return func, sch


def test_reverse_compute_at_refuses_a_producer_writing_with_holes():
    func, sch = _flattened((2, 0, 1))  # k outermost: one iteration writes T2[k] and T2[16 + k]
    outer = sch.get_loops(sch.get_block("T2"))[0]
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_at(sch.get_block("T2_local"), outer, preserve_unit_loops=True)
    assert err.value.rule == "reverse_compute_at.reads-unwritten"
    assert "with gaps in dimension 1" in str(err.value)
    assert sch.func is before
    check_result(func, sch, target=Target())


def test_reverse_compute_at_still_moves_under_a_loop_whose_writes_are_contiguous():
    func, sch = _flattened((0, 1, 2))  # under j, the k loop writes T2[j * 16 : j * 16 + 16]
    middle = sch.get_loops(sch.get_block("T2"))[1]
    sch.reverse_compute_at(sch.get_block("T2_local"), middle, preserve_unit_loops=True)
    check_result(func, sch, target=Target())
