"""Fuzzer regressions of the 20000-case campaign of seed 21 (issue 12)."""

import pytest

from tessel import te
from tessel.ir.target import Target
from tessel.schedule import Schedule, ScheduleError
from tessel.testing.fuzz import campaign
from tessel.testing.fuzz.case import Options, check_result


def _window_sum_then_square():
    a0 = te.placeholder((4, 13), "float32", name="A0")
    r = te.reduce_axis((0, 4), name="r")
    t1 = te.compute((13,), lambda i0: te.sum(a0[r, i0], axis=r), name="T1")
    w = te.reduce_axis((0, 3), name="w")
    t2 = te.compute((11,), lambda i0: te.sum(t1[i0 + w], axis=w), name="T2")
    t3 = te.compute((11,), lambda i0: t2[i0] * t2[i0] - t2[i0], name="T3")
    return te.create_prim_func([a0, t3])


def test_reverse_compute_at_refuses_a_loop_inside_the_producers_reduction_loop():
    """Case 2569: with T2's reduction loop reordered outside its spatial loops, one iteration
    of an inner loop leaves only partial sums; T3 moved there read them (and T2[1] unwritten)."""
    func = _window_sum_then_square()
    sch = Schedule(func)
    i0, _ = sch.get_loops(sch.get_block("T2"))
    sch.split(i0, [None, 8], preserve_unit_iters=False)
    outer, inner, w = sch.get_loops(sch.get_block("T2"))
    sch.reorder(w, outer)
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.reverse_compute_at(sch.get_block("T3"), inner, preserve_unit_loops=False)
    assert err.value.rule == "reverse_compute_at.partial-reduction"
    assert "`T2` reduces over ['w']" in str(err.value)
    assert sch.func is before
    check_result(func, sch, target=Target())


def test_reverse_compute_at_still_moves_under_a_loop_outside_the_reduction():
    """The same producer with its reduction loop innermost: each iteration finishes its sums."""
    func = _window_sum_then_square()
    sch = Schedule(func)
    i0, _ = sch.get_loops(sch.get_block("T2"))
    outer, _ = sch.split(i0, [None, 8])
    sch.reverse_compute_at(sch.get_block("T3"), outer)
    check_result(func, sch, target=Target())


def test_case_1933_split_without_unit_iters_then_compute_at_regenerated_from_the_seed():
    """Case 1933: the C was wrong at gcc -O3 only; UnswitchGuards had emitted a copy of a loop
    body under two contradictory conditions whose stores gcc let leak into the result. The
    copy is no longer made (tests/transform/test_unswitch_guards.py)."""
    record = campaign.run_in_process(21, [1933], Options())[0]
    assert record.result.scheduled and record.result.failure is None
