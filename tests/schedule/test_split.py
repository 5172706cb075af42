"""split: divisible, inferred, non-divisible (predicate), and its errors."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule
from tessel.testing.schedules import named_like


@T.prim_func
def add_one(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] + T.float32(1)


@T.prim_func
def add_one_127(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
    for i in range(127):
        with T.block("B"):
            vi = T.axis.spatial(127, i)
            B[vi] = A[vi] + T.float32(1)


def test_split_by_divisible_factors():
    @T.prim_func
    def expected(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i_0, i_1 in T.grid(32, 4):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 4 + i_1)
                B[vi] = A[vi] + T.float32(1)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        sch.split(i, factors=[None, 4])

    check_schedule(add_one, steps, expected)


def test_split_three_ways():
    # TVM's binding: each new loop times the extents inside it, not (i_0 * 8 + i_1) * 4 + i_2.
    @T.prim_func
    def expected(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i_0, i_1, i_2 in T.grid(4, 8, 4):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 32 + i_1 * 4 + i_2)
                B[vi] = A[vi] + T.float32(1)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        outer, middle, inner = sch.split(i, factors=[4, 8, 4])
        assert [loop.loop_var.name for loop in (outer, middle, inner)] == ["i_0", "i_1", "i_2"]

    check_schedule(add_one, steps, expected)


def test_non_divisible_three_way_split_predicate_has_tvms_form():
    @T.prim_func
    def expected(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
        for i_0, i_1, i_2 in T.grid(8, 4, 4):
            with T.block("B"):
                vi = T.axis.spatial(127, i_0 * 16 + i_1 * 4 + i_2)
                T.where((i_0 * 4 + i_1) * 4 + i_2 < 127)
                B[vi] = A[vi] + T.float32(1)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        sch.split(i, factors=[None, 4, 4])

    check_schedule(add_one_127, steps, expected)


def test_non_divisible_split_guards_the_block_with_a_predicate():
    @T.prim_func
    def expected(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
        for i_0, i_1 in T.grid(32, 4):
            with T.block("B"):
                vi = T.axis.spatial(127, i_0 * 4 + i_1)
                T.where(i_0 * 4 + i_1 < 127)
                B[vi] = A[vi] + T.float32(1)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        sch.split(i, factors=[None, 4])

    check_schedule(add_one_127, steps, expected)


@pytest.mark.parametrize(
    ("factors", "rule"),
    [
        ([4], "split.factor-count"),
        ([None, None], "split.one-inferred"),
        ([0, 4], "split.positive-factors"),
    ],
)
def test_bad_factors_are_refused_and_the_function_is_unchanged(factors, rule):
    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as err:
        sch.split(i, factors=factors)
    assert err.value.rule == rule
    assert "for i in range(128)" in str(err.value)  # the function is printed with the fault
    assert_structural_equal(sch.func, add_one)
    assert len(sch.trace) == 2  # the failed step is not recorded


def test_a_split_loop_handle_goes_stale_with_a_clear_error():
    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 4])
    with pytest.raises(ScheduleError, match="no longer in the function") as err:
        sch.split(i, factors=[2, 64])
    assert err.value.rule == "split.stale-handle"


def test_trace_prints_as_python():
    sch = Schedule(add_one)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 4])
    assert str(sch.trace).splitlines() == [
        "b0 = sch.get_block('B')",
        "l1, = sch.get_loops(b0)",
        "l2, l3 = sch.split(l1, factors=[None, 4])",
    ]


@T.prim_func
def scale_cube(A: T.Buffer((128, 128, 128), "float32"), B: T.Buffer((128, 128, 128), "float32")):
    for i, j, k in T.grid(128, 128, 128):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


def test_split_with_predicates_matches_tvms_test_split_with_predicate():
    """TVM's test_split_with_predicate: flat bindings, the predicate in nested form, and the
    unit loop j0 kept in the bindings."""

    @T.prim_func
    def expected(A: T.Buffer((128, 128, 128), "float32"), B: T.Buffer((128, 128, 128), "float32")):
        for i0, i1, i2, j0, j1, k0, k1 in T.grid(1000, 2, 3, 1, 129, 3, 43):
            with T.block("B"):
                vi = T.axis.S(128, i0 * 6 + i1 * 3 + i2)
                vj = T.axis.S(128, j0 * 129 + j1)
                vk = T.axis.S(128, k0 * 43 + k1)
                T.where((i0 * 2 + i1) * 3 + i2 < 128 and j0 * 129 + j1 < 128 and k0 * 43 + k1 < 128)
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)

    def steps(sch):
        i, j, k = sch.get_loops("B")
        sch.split(i, factors=[1000, 2, 3])
        sch.split(j, factors=[None, 129])
        sch.split(k, factors=[3, None])

    sch = Schedule(scale_cube)
    steps(sch)
    assert_structural_equal(sch.func, named_like(expected, sch.func))
