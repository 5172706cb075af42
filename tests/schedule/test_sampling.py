"""sample_perfect_tile and sample_categorical: seeded draws whose decisions replay."""

import math

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def scale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] * T.float32(2)


def test_perfect_tile_with_a_given_decision_splits_as_decided():
    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i_0, i_1, i_2 in T.grid(2, 8, 4):
            with T.block("B"):
                vi = T.axis.spatial(64, i_0 * 32 + i_1 * 4 + i_2)
                B[vi] = A[vi] * T.float32(2)

    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        factors = sch.sample_perfect_tile(i, n=3, max_innermost_factor=4, decision=[2, 8, 4])
        sch.split(i, factors)

    check_schedule(scale, steps, expected)


def test_sampled_tiles_are_perfect_seeded_and_replay():
    def steps(sch):
        (i,) = sch.get_loops(sch.get_block("B"))
        factors = sch.sample_perfect_tile(i, n=3, max_innermost_factor=4)
        assert math.prod(factors) == 64
        assert factors[-1] <= 4
        sch.split(i, factors)

    first = check_schedule(scale, steps)  # the replay reuses the recorded decision
    second = check_schedule(scale, steps)
    assert_structural_equal(first.func, second.func)  # seed 0 by default: deterministic
    assert "decision=" in str(first.trace)


def test_seed_changes_the_draws_and_categorical_replays():
    draws = set()
    for seed in range(8):
        sch = Schedule(scale)
        sch.seed(seed)
        value = sch.sample_categorical([1, 2, 4, 8], [0.25, 0.25, 0.25, 0.25])
        replayed = Schedule(scale)
        replayed.seed(seed + 100)  # a different seed: the recorded decision wins
        sch.trace.apply_to_schedule(replayed)
        assert replayed.trace.instructions[-1].outputs == (value,)
        draws.add(value)
    assert len(draws) > 1


def test_categorical_with_a_decision_returns_that_candidate():
    sch = Schedule(scale)
    assert sch.sample_categorical([3, 5, 7], [0.2, 0.3, 0.5], decision=1) == 5


def test_perfect_tile_refuses_a_decision_that_is_not_a_tiling():
    sch = Schedule(scale)
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="decision") as err:
        sch.sample_perfect_tile(i, n=2, decision=[3, 8])
    assert err.value.rule == "sample_perfect_tile.decision"
    assert_structural_equal(sch.func, scale)


def test_categorical_refuses_mismatched_probabilities():
    sch = Schedule(scale)
    with pytest.raises(ScheduleError) as err:
        sch.sample_categorical([1, 2], [1.0])
    assert err.value.rule == "sample_categorical.arity"
    assert_structural_equal(sch.func, scale)
