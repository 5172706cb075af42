"""The default schedule (tessel.schedule.rules.default_schedule) is a Schedule whose trace shows
and replays every step, keeps the results of every kernel kind it has a rule for on odd shapes
(interpreter and C), and `tessel.build(..., schedule="default")` applies it."""

import numpy as np
import pytest
from rules_testing import rule_records

import tessel
from tessel import te, topi
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule, schedule_with_plans
from tessel.support.errors import UserError
from tessel.testing import check_same_results


def _dense(m, k, n):
    x, w = te.placeholder((m, k), name="x"), te.placeholder((n, k), name="w")
    return te.create_prim_func([x, w, topi.nn.relu(topi.nn.dense(x, w))])


def _conv(c, f, size):
    x, w = te.placeholder((1, c, size, size), name="x"), te.placeholder((f, c, 3, 3), name="w")
    return te.create_prim_func([x, w, topi.nn.conv2d_nchw(x, w, 1, 1, 1)])


def _softmax(*shape):
    x = te.placeholder(shape, name="x")
    return te.create_prim_func([x, topi.nn.softmax(x)])


def _elementwise(*shape):
    x = te.placeholder(shape, name="x")
    return te.create_prim_func([x, topi.sigmoid(topi.add(x, x))])


def _unit_reshape(*shape):
    x = te.placeholder(shape, name="x")
    return te.create_prim_func([x, topi.reshape(x, (*shape, 1))])


KERNELS = {
    "dense 1x7x129": lambda: _dense(1, 7, 129),
    "dense 127x13x17": lambda: _dense(127, 13, 17),
    "dense 129x127x7": lambda: _dense(129, 127, 7),
    "conv 3->16 at 7": lambda: _conv(3, 16, 7),
    "conv 5->7 at 13": lambda: _conv(5, 7, 13),
    "softmax 3x129": lambda: _softmax(3, 129),
    "softmax 1x1": lambda: _softmax(1, 1),
    "elementwise 7x127": lambda: _elementwise(7, 127),
    "reshape 3x13x11 to a trailing unit axis": lambda: _unit_reshape(3, 13, 11),
}


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_default_schedule_keeps_results_and_its_trace_replays(kernel):
    func = KERNELS[kernel]()
    sch = default_schedule(func)
    assert isinstance(sch, Schedule)
    assert len(sch.trace.instructions) > 0  # every step is a recorded primitive
    check_same_results(func, sch.func, rtol=1e-5, atol=1e-5)
    replayed = Schedule(func)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)


def test_a_trailing_unit_loop_is_fused_into_the_vector_loop():
    """NCHW -> NCHW1c: the vector is the last non-unit axis (one lane was a division per
    element), the rest parallel."""
    tir = default_schedule(_unit_reshape(1, 3, 112, 112)).func.script()
    assert "T.vectorized(112)" in tir and "T.parallel(336)" in tir


def test_build_with_the_default_schedule():
    func = _dense(33, 20, 17)
    x = np.random.default_rng(0).standard_normal((33, 20), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((17, 20), dtype=np.float32)
    out = np.empty((33, 17), np.float32)
    module = tessel.build(func, schedule="default")
    module(x, w, out)
    np.testing.assert_allclose(out, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-5)
    assert "tessel_parallel_for(" in module.source


def test_build_refuses_an_unknown_schedule():
    with pytest.raises(UserError, match="unknown schedule 'fast'"):
        tessel.build(_dense(2, 2, 2), schedule="fast")


def test_register_tiles_follow_the_targets_vector_registers():
    """48 rows: 8 per tile where AVX-512's 32 registers hold them, 6 with AVX2's 16 (each
    16-float row of accumulators is two 32-byte registers of 8 lanes); results unchanged."""
    from tessel.ir.target import Target

    func = _dense(48, 13, 32)
    avx512 = schedule_with_plans(func, Target(vector_bytes=64, vector_registers=32))
    avx2 = schedule_with_plans(func, Target(vector_bytes=32, vector_registers=16))
    tiles = [(rule_records(r)[0].plan.rows, rule_records(r)[0].plan.lanes) for r in (avx512, avx2)]
    assert tiles == [(8, 16), (6, 8)]
    check_same_results(func, avx2.schedule.func, rtol=1e-5, atol=1e-5)


def test_the_rules_steps_are_verified_once_and_later_steps_each(monkeypatch):
    """Verifying after each of the rules' steps was 40% of scheduling a model: the default
    schedule checks its result once, and the schedule it hands back checks every step added."""
    from tessel.schedule import recording

    checked: list[str] = []
    real = recording.verify_well_formed
    monkeypatch.setattr(recording, "verify_well_formed", lambda f: checked.append(f) or real(f))
    sch = default_schedule(_dense(127, 13, 17))
    assert len(sch.trace) > 3
    assert len(checked) == 1
    sch.get_loops(sch.get_block("x_pad"))  # queries: the function is unchanged
    assert len(checked) == 1
    sch.compute_inline(sch.get_block("x_pad"))
    assert len(checked) == 2


def test_an_ill_formed_default_schedule_is_an_internal_error(monkeypatch):
    from tessel.schedule import recording
    from tessel.support.errors import InternalError
    from tessel.tir.verify import VerifyError

    def broken(func):
        raise VerifyError("a variable used out of its scope")

    monkeypatch.setattr(recording, "verify_well_formed", broken)
    with pytest.raises(InternalError, match="the default schedule produced ill-formed IR"):
        default_schedule(_dense(127, 13, 17))
