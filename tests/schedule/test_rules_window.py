"""The window-reduction rule (tessel.schedule.rules.window): max and average pooling keep their
results (interpreter and C, odd shapes, strides and paddings), the trace replays, the output row
is the vector and the window loops run outside it; global pooling is left to other rules."""

import pytest

from tessel import te, topi
from tessel.ir.functor import post_order
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.window import schedule_window_reduction, window_spatial_count
from tessel.schedule.state import block_names
from tessel.testing import check_same_results, check_schedule
from tessel.tir.stmt import For, ForKind

# (data shape, kernel, stride, padding (top, left, bottom, right))
CASES = [
    ((1, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1)),  # ResNet's max pool, odd and small
    ((2, 5, 9, 129), (3, 3), (1, 1), (1, 1, 1, 1)),  # a row longer than a vector, odd
    ((1, 2, 8, 17), (2, 2), (2, 2), (0, 0, 0, 0)),  # no padding
    ((1, 1, 5, 1), (3, 1), (1, 1), (1, 0, 1, 0)),  # a row of one
    ((1, 4, 6, 127), (2, 3), (2, 3), (0, 1, 1, 2)),  # uneven window, stride and padding
]


def _pool(shape, kernel, stride, padding, pool_type):
    data = te.placeholder(shape, "float32", name="data")
    out = topi.nn.pool2d(data, kernel, stride, (1, 1), padding, pool_type)
    return te.create_prim_func([data, out])


def _schedule_pool(sch: Schedule) -> set[str]:
    for name in block_names(sch.func):
        if name != "root" and window_spatial_count(sch.block(sch.get_block(name)).block):
            applied = schedule_window_reduction(sch, name)
            return set(applied.blocks) if applied is not None else set()
    return set()


def _loops(func):
    return [node for node in post_order(func.body) if isinstance(node, For)]


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), CASES, ids=str)
def test_rule_keeps_results_and_replays(shape, kernel, stride, padding, pool_type):
    func = _pool(shape, kernel, stride, padding, pool_type)
    sch = check_schedule(func, _schedule_pool, rtol=1e-5, atol=1e-5)
    loops = _loops(sch.func)
    assert any(loop.kind is ForKind.PARALLEL for loop in loops)
    vectorized = [loop for loop in loops if loop.kind is ForKind.VECTORIZED]
    width = sch.func.buffer_map[sch.func.params[-1]].shape[-1].value
    assert any(loop.extent.value == width for loop in vectorized)  # the output row


def test_window_loops_run_outside_the_row():
    sch = Schedule(_pool((1, 2, 8, 8), (3, 3), (1, 1), (1, 1, 1, 1), "max"))
    assert _schedule_pool(sch)
    text = sch.func.script()
    window = text.index("for rv_h, rv_w in T.grid(3, 3):")
    assert "T.vectorized(8)" in text[window:]  # the row loop, inside the window loops


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_default_schedule_applies_it(pool_type):
    func = _pool((1, 3, 11, 11), (3, 3), (2, 2), (1, 1, 1, 1), pool_type)
    sch = default_schedule(func)
    check_same_results(func, sch.func, rtol=1e-5, atol=1e-5)
    assert any(
        loop.kind is ForKind.VECTORIZED and loop.extent.value == 6 for loop in _loops(sch.func)
    )


def test_global_pooling_is_not_a_window_reduction():
    data = te.placeholder((1, 4, 7, 7), "float32", name="data")
    func = te.create_prim_func([data, topi.nn.global_pool(data, "avg")])
    sch = Schedule(func)
    assert not any(
        window_spatial_count(sch.block(sch.get_block(name)).block)
        for name in block_names(sch.func)
        if name != "root"
    )
