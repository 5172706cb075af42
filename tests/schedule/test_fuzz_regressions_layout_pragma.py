"""Fuzzer regressions (issue 12): buffer_split with an overshooting outermost factor on a
parameter (campaign seed 0 cases 1638, 1920; seed 2 cases 0, 152), and unroll or vectorize under
a `pragma_auto_unroll_max_step` loop (seed 0 cases 299, 994)."""

import pytest

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import Var
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.testing import check_layout_schedule, check_same_results
from tessel.tir import stmt as S


def _sum_of_one() -> object:
    """T1[0] = sum over r < 1 of A0[r]: every extent is 1 (seed 0, case 1638)."""
    a0 = te.placeholder((1,), "int32", name="A0")
    r = te.reduce_axis((0, 1), name="r")
    t1 = te.compute((1,), lambda i0: te.sum(a0[r], axis=r), name="T1")
    return te.create_prim_func([a0, t1])


def _add_one(n: int) -> object:
    a = te.placeholder((n,), "float32", name="A")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    return te.create_prim_func([a, b])


def test_overshooting_outer_factor_on_a_parameter_is_refused_unchanged():
    func = _sum_of_one()
    sch = Schedule(func)
    (axis,) = sch.get_buffer_axes(sch.get_block("T1"), ("write", 0))
    with pytest.raises(ScheduleError) as err:
        sch.buffer_split(axis, [2, None], pad_value=0)
    assert err.value.rule == "buffer_split.factor-too-large"
    assert "give 1 as the outermost factor" in (err.value.hint or "")
    assert_structural_equal(sch.func, func)
    assert sch.layout_records() == {}


@pytest.mark.parametrize(("n", "factors"), [(5, [4, None]), (10, [5, 3])])
def test_an_outer_factor_past_the_rows_the_axis_fills_is_refused(n, factors):
    sch = Schedule(_add_one(n))
    (axis,) = sch.get_buffer_axes(sch.get_block("B"), ("write", 0))
    with pytest.raises(ScheduleError, match="factor-too-large"):
        sch.buffer_split(axis, factors, pad_value=0.0)


@pytest.mark.parametrize(
    ("n", "factors", "shape"),
    [(1, [1, None], (1, 1)), (5, [3, None], (3, 2)), (10, [4, 3], (4, 3)), (1, [None, 2], (1, 2))],
)
def test_the_hinted_factors_give_a_record_matching_the_signature(n, factors, shape):
    def steps(sch: Schedule) -> None:
        (axis,) = sch.get_buffer_axes(sch.get_block("B"), ("write", 0))
        sch.buffer_split(axis, factors, pad_value=0.0)

    sch = check_layout_schedule(_add_one(n), steps)
    new = sch.func.buffer_map[sch.func.params[1]]
    assert tuple(int(e.value) for e in new.shape) == shape
    assert sch.layout_records()["B"].new_shape == shape


def _sum_then_add() -> object:
    """Seed 0, case 299: T4 = (sum over r < 1 of A0[r]) + A2 + 1, all of extent 1."""
    a0 = te.placeholder((1,), "int32", name="A0")
    r = te.reduce_axis((0, 1), name="r")
    t1 = te.compute((1,), lambda i0: te.sum(a0[r], axis=r), name="T1")
    a2 = te.placeholder((1,), "int32", name="A2")
    t3 = te.compute((1,), lambda i0: t1[i0] + a2[i0], name="T3")
    t4 = te.compute((1,), lambda i0: t3[i0] + 1, name="T4")
    return te.create_prim_func([a0, a2, t4])


def test_unroll_under_an_auto_unroll_pragma_lowers():
    func = _sum_then_add()
    sch = Schedule(func)
    (loop,) = sch.get_loops(sch.get_block("T4"))
    sch.unroll(loop)
    sch.annotate(loop, "pragma_auto_unroll_max_step", 16)
    check_same_results(func, sch.func)


def test_vectorize_under_an_auto_unroll_pragma_lowers():
    """Seed 0, case 994."""
    a0 = te.placeholder((1,), "float32", name="A0")
    a1 = te.placeholder((1,), "float32", name="A1")
    t2 = te.compute((1,), lambda i0: a0[i0] * a1[i0], name="T2")
    func = te.create_prim_func([a0, a1, t2])
    sch = Schedule(func)
    (loop,) = sch.get_loops(sch.get_block("T2"))
    sch.annotate(loop, "pragma_auto_unroll_max_step", 16)
    sch.vectorize(loop, vector_length=4)
    check_same_results(func, sch.func)


def test_with_changes_replaces_a_field_named_node():
    """The cause: `with_changes(node, **changes)` could not take a field called `node`
    (AttrStmt.node), which unrolling substitutes in a pragma's AttrStmt."""
    i, j = Var("i", "int32"), Var("j", "int32")
    attr = S.AttrStmt(
        i,
        "pragma_auto_unroll_max_step",
        builders.const(16, "int32"),
        S.Evaluate(builders.const(0, "int32")),
    )
    assert with_changes(attr, node=i) is attr
    assert with_changes(attr, node=j).node is j
