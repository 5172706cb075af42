"""vectorize(loop, vector_length=N): the annotation, its checks, its trace and its lowering."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing import check_schedule
from tessel.transform import lower


@T.prim_func
def scale(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
    for i in range(127):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(3) + T.float32(1)


@T.prim_func
def row_sums(A: T.Buffer((8, 16), "float32"), S: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]


def _loop(sch):
    (i,) = sch.get_loops(sch.get_block("B"))
    return i


def test_vector_length_is_recorded_as_a_loop_annotation():
    @T.prim_func
    def expected(A: T.Buffer((127,), "float32"), B: T.Buffer((127,), "float32")):
        for i in T.vectorized(127, annotations={"vector_length": 8}):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.float32(3) + T.float32(1)

    sch = check_schedule(scale, lambda sch: sch.vectorize(_loop(sch), vector_length=8), expected)
    assert_structural_equal(parse(str(sch.func)), sch.func)  # the annotation prints and parses


def test_the_trace_prints_the_vector_length_and_replays_as_python():
    sch = Schedule(scale)
    sch.vectorize(_loop(sch), vector_length=8)
    text = str(sch.trace)
    assert "sch.vectorize(l1, vector_length=8)" in text
    replayed = Schedule(scale)
    exec(text, {"sch": replayed})  # the printed trace is runnable Python
    assert_structural_equal(replayed.func, sch.func)


def test_vectorize_without_a_length_drops_an_earlier_one():
    sch = Schedule(scale)
    i = _loop(sch)
    sch.vectorize(i, vector_length=8)
    sch.vectorize(i)
    assert "vector_length" not in sch.loop(i).annotations


@pytest.mark.parametrize("bad", [1, 0, -8, 65, 8.0, True, "8"])
def test_a_vector_length_that_is_not_a_lane_count_is_refused(bad):
    sch = Schedule(scale)
    i = _loop(sch)
    with pytest.raises(ScheduleError, match="vector_length must be an int from 2 to 64") as err:
        sch.vectorize(i, vector_length=bad)
    assert err.value.rule == "vectorize.vector-length"
    assert_structural_equal(sch.func, scale)  # the schedule did not change
    assert len(sch.trace) == 2  # get_block and get_loops only


def test_a_reduction_loop_is_refused_with_a_vector_length_too():
    sch = Schedule(row_sums)
    _, k = sch.get_loops(sch.get_block("S"))
    with pytest.raises(ScheduleError) as err:
        sch.vectorize(k, vector_length=4)
    assert err.value.rule == "vectorize.data-parallel"
    assert_structural_equal(sch.func, row_sums)


@pytest.mark.parametrize("vector_length", [8, 6, 16, 64])
def test_vector_length_lowers_like_split_then_vectorize(vector_length):
    direct = check_schedule(
        scale, lambda sch: sch.vectorize(_loop(sch), vector_length=vector_length)
    )
    split = Schedule(scale)
    _, inner = split.split(_loop(split), [None, vector_length])
    split.vectorize(inner)
    assert_structural_equal(lower(direct.mod)["main"], lower(split.mod)["main"])
