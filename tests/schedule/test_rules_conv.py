"""The default schedule's conv rule (tessel.schedule.rules.conv): conv2d (strides, padding,
dilation, odd channel counts and sizes, with its relu epilogue), depthwise conv2d (groups) and
TOPI's depthwise_conv2d_nchw, and grouped conv2d (RegNet's, ResNeXt's) compile to vectorized
kernels that give the reference results.
Models are compiled without AlterOpLayout here, so their convolutions stay NCHW (the blocked
ones: test_rules_conv_nchwc.py)."""

import numpy as np
import pytest
from rules_testing import COLUMNS, LANES, compile_and_check, model, rand, rule_plans, rule_records

import tessel
from tessel import te, topi
from tessel.graph.executor import default_passes
from tessel.graph.passes import AlterOpLayout
from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule, schedule_with_plans
from tessel.schedule.rules.conv import ConvTilePlan
from tessel.schedule.rules.conv_rows import DepthwiseLoopsPlan, DepthwiseRowsPlan, GroupedRowsPlan
from tessel.testing import check_same_results

NCHW_PASSES = [p for p in default_passes() if not isinstance(p, AlterOpLayout)]


def _conv(
    ci: int, co: int, size: int, kernel: int, stride: int, pad: int, dilation: int, groups: int = 1
) -> str:
    return (
        f"  %0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, "
        f"{pad}], dilation=[{dilation}, {dilation}], groups={groups}, channels={co}, "
        f"kernel_size=[{kernel}, {kernel}]);\n  nn.relu(%0)"
    )


CONV2D = [
    # (batch, in channels, out channels, size, kernel, stride, padding, dilation)
    (1, 3, 17, 13, 3, 1, 1, 1),
    (1, 7, 16, 13, 3, 2, 1, 1),
    (2, 17, 7, 7, 3, 1, 2, 2),
    (1, 16, 33, 7, 1, 1, 0, 1),
    (1, 3, 8, 13, 7, 2, 3, 1),
    (1, 3, 24, 13, 3, 2, 1, 1),
    (1, 17, 32, 16, 1, 2, 0, 1),
    (2, 7, 3, 13, 5, 1, 0, 1),
]


@pytest.mark.parametrize(("n", "ci", "co", "size", "k", "s", "p", "d"), CONV2D)
def test_conv2d_relu(n, ci, co, size, k, s, p, d):
    mod = model(
        _conv(ci, co, size, k, s, p, d),
        f"%x: Tensor[({n}, {ci}, {size}, {size}), float32], "
        f"%w: Tensor[({co}, {ci}, {k}, {k}), float32]",
    )
    tir = compile_and_check(
        mod, {"x": rand(n, ci, size, size)}, {"w": rand(co, ci, k, k, seed=1)}, NCHW_PASSES
    )
    width = (size + 2 * p - d * (k - 1) - 1) // s + 1
    dividing = next(t for t in (8, 7, 6, 5, 4, 3, 2, 1) if width % t == 0)
    # x_i: the largest tile that leaves no tail, or a tail where that is cheaper (one channel
    # vector a column: a row of 13 in a tile of 8 and a tail of 5, not 13 tiles of one column;
    # 9 in 8 and 1, not 3 tiles of 3 accumulators, each waiting on its FMA's latency)
    columns = {13: 8, 9: 8}.get(width, dividing)
    (plan,) = rule_plans(mod, {"w": rand(co, ci, k, k, seed=1)}, NCHW_PASSES)
    tile = next(t for t in (32, 16, 8, 4, 2, 1) if co % t == 0 and t <= COLUMNS)
    assert isinstance(plan, ConvTilePlan) and plan.pack_weight
    assert (plan.columns, plan.channels, plan.lanes) == (columns, tile, LANES)
    assert "conv2d_nchw_init" in tir  # decompose_reduction
    assert 'scope="local"' in tir  # the accumulators
    assert "T.max(conv2d_nchw_local" in tir  # the relu, inlined into the write-back
    if p:  # the padding stays its own nest, so the conv's loads need no bounds check
        assert 'T.block("pad_temp")' in tir


DEPTHWISE = [
    # (channels, size, kernel, stride, padding)
    (7, 13, 3, 1, 1),  # 7 channels: rows are the vector (13 lanes of 16)
    (17, 7, 3, 2, 1),
    (3, 13, 5, 1, 2),
    (7, 40, 3, 2, 1),  # a row of 20: a vector of 16 and a masked tail; input split by parity
    (5, 9, 3, 2, 1),  # the padded width 11 is odd: the parity layout pads it to 12
    (16, 16, 3, 2, 1),  # 16 channels: the channel-blocked tile
    (24, 14, 3, 1, 1),  # blocks of 8 channels
    (12, 20, 3, 2, 1),  # blocks of 4, stride 2
    (32, 7, 3, 1, 0),  # no padding block: the input is copied into the blocked layout
]


@pytest.mark.parametrize(("c", "size", "k", "s", "p"), DEPTHWISE)
def test_depthwise_relu(c, size, k, s, p):
    mod = model(
        _conv(c, c, size, k, s, p, 1, groups=c),
        f"%x: Tensor[(1, {c}, {size}, {size}), float32], %w: Tensor[({c}, 1, {k}, {k}), float32]",
    )
    tir = compile_and_check(
        mod, {"x": rand(1, c, size, size)}, {"w": rand(c, 1, k, k, seed=1)}, NCHW_PASSES
    )
    assert "group_conv2d_nchw_init" in tir  # groups=c: the grouped tile, with c of extent 1
    assert 'scope="local"' in tir  # the accumulators, with the relu in their write-back
    (plan,) = rule_plans(mod, {"w": rand(c, 1, k, k, seed=1)}, NCHW_PASSES)
    tile = next(t for t in (16, 8, 4, 2, 1) if c % t == 0 and t <= LANES)
    if tile >= 4:  # channel blocks: the input laid out [n, c // tile, h, w, c % tile]
        assert isinstance(plan, ConvTilePlan)
        assert plan.channels == plan.data_blocks == tile
        padded = size + 2 * p
        assert f"({1}, {c // tile}, {padded}, {padded}, {tile})" in tir
    else:  # rows: the vector is the output row, whole up to a vector's lanes
        width = (size + 2 * p - k) // s + 1
        assert plan == GroupedRowsPlan(plan.block, tile, LANES, width > LANES, s if s > 1 else 1)
        if s == 2:  # the padded input laid out by column parity
            half = (size + 2 * p + 1) // 2
            assert f', 2, {half}), "float32")' in tir


GROUPED = [
    # (in channels, out channels, groups, size, kernel, stride, padding): RegNet's group width 8,
    # ResNeXt-like 16 and 32 channels a group, 24 (a tile of 8), a channel multiplier of 2, and
    # groups of 4 channels (narrower than a vector: the row-vectorized grouped tile)
    (16, 16, 2, 14, 3, 1, 1),
    (24, 24, 3, 9, 3, 2, 1),
    (32, 32, 2, 7, 3, 1, 1),
    (64, 64, 2, 7, 3, 1, 1),
    (48, 48, 2, 7, 3, 1, 1),
    (8, 16, 2, 9, 3, 1, 1),
    (16, 16, 4, 9, 3, 1, 1),
]


@pytest.mark.parametrize(("ci", "co", "g", "size", "k", "s", "p"), GROUPED)
def test_grouped_conv_relu(ci, co, g, size, k, s, p):
    mod = model(
        _conv(ci, co, size, k, s, p, 1, groups=g),
        f"%x: Tensor[(1, {ci}, {size}, {size}), float32], "
        f"%w: Tensor[({co}, {ci // g}, {k}, {k}), float32]",
    )
    tir = compile_and_check(
        mod, {"x": rand(1, ci, size, size)}, {"w": rand(co, ci // g, k, k, seed=1)}, NCHW_PASSES
    )
    per_group = co // g
    assert 'scope="local"' in tir  # the accumulators, with the relu in their write-back
    (plan,) = rule_plans(mod, {"w": rand(co, ci // g, k, k, seed=1)}, NCHW_PASSES)
    if per_group % 8 == 0:  # the conv2d tile of a group's channels: one broadcast input a step
        assert isinstance(plan, ConvTilePlan)
        assert per_group % plan.channels == 0  # the weight packed [f // F, c, r, s, F]
        assert f"({co // plan.channels}, {ci // g}, {k}, {k}, {plan.channels})" in tir
    else:  # narrower groups: the output row is the vector
        width = (size + 2 * p - k) // s + 1
        assert isinstance(plan, GroupedRowsPlan) and plan.split_row == (width > LANES)


@pytest.mark.parametrize(
    ("c", "m", "size", "k", "s", "p"),
    [
        (7, 1, 13, 3, 1, 1),
        (17, 2, 7, 3, 2, 1),
        (16, 1, 13, 3, 1, 1),  # channel blocks of 16: the conv2d tile
        (12, 1, 9, 3, 2, 1),  # blocks of 4, stride 2
        (32, 1, 7, 3, 1, 0),  # no padding block: the input is copied into the blocked layout
    ],
)
def test_topi_depthwise(c, m, size, k, s, p):
    """topi.nn.depthwise_conv2d_nchw: with one kernel per channel and at least 4 channels a
    block, the channel-blocked conv2d tile (the input laid out [n, c // F, h, w, c % F]); else
    reductions outside x, x vectorized. Same results as unscheduled."""
    data = te.placeholder((1, c, size, size), name="data")
    kernel = te.placeholder((c, m, k, k), name="kernel")
    out = topi.nn.depthwise_conv2d_nchw(data, kernel, s, p, 1)
    func = te.create_prim_func([data, kernel, out])
    report = schedule_with_plans(func)
    scheduled = report.schedule.func
    (applied,) = rule_records(report)
    tile = next(t for t in (16, 8, 4, 2, 1) if c % t == 0)
    if m == 1 and tile >= 4:
        assert isinstance(applied.plan, ConvTilePlan)
        assert applied.plan.data_blocks == applied.plan.channels == tile
        padded = size + 2 * p
        assert f"(1, {c // tile}, {padded}, {padded}, {tile})" in scheduled.script()
    else:
        assert applied.plan == DepthwiseLoopsPlan("DepthwiseConv2d")
        assert 'T.block("PaddedInput")' in scheduled.script()  # kept, not inlined
    x, w = rand(1, c, size, size), rand(c, m, k, k, seed=1)
    expected, got = np.zeros(out.shape, "float32"), np.zeros(out.shape, "float32")
    tessel.build(func)(x, w, expected)
    tessel.build(scheduled)(x, w, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("c", "m", "height", "width", "lanes", "rows"),
    [
        (8, 1, 16, 16, 16, 4),  # one vector a row, tiles of 4 rows
        (5, 2, 20, 20, 4, 4),  # channel multiplier 2; 20 columns: five vectors of 4
        (3, 1, 7, 32, 16, 1),  # 7 rows: tiles of one row
        (6, 1, 9, 24, 8, 3),  # 24 columns: three vectors of 8; 9 rows: tiles of 3
    ],
)
def test_topi_depthwise_on_long_rows_vectorizes_the_row(c, m, height, width, lanes, rows):
    """Stride 1, rows of 16 columns or more: the vector is the output row (lanes dividing it),
    tiles of rows in registers, each channel's padding computed in its parallel iteration.
    Same results as unscheduled in the interpreter and C; the trace replays."""
    data = te.placeholder((1, c, height, width), name="data")
    kernel = te.placeholder((c, m, 3, 3), name="kernel")
    out = topi.nn.depthwise_conv2d_nchw(data, kernel, 1, 1, 1)
    func = te.create_prim_func([data, kernel, out])
    target = Target(vector_bytes=64, vector_registers=32)
    scheduled = default_schedule(func, target)
    check_same_results(func, scheduled.func, rtol=1e-4, atol=1e-4)
    replayed = Schedule(func)
    scheduled.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, scheduled.func)
    (plan,) = (applied.plan for applied in rule_records(schedule_with_plans(func, target)))
    assert plan == DepthwiseRowsPlan("DepthwiseConv2d", rows, lanes)
    tir = scheduled.func.script()
    assert 'scope="local"' in tir  # the tile's accumulators
    assert f"T.parallel({c * m})" in tir  # one iteration a channel, its padding inside


@pytest.mark.parametrize("registers", [16, 32])
def test_conv2d_channel_tile_follows_the_register_file(registers):
    """32 registers: 32 output channels a tile, two vectors unrolled; 16: one vector of 16.
    Both give the unscheduled results (C), odd width and a 3x3 window."""
    data = te.placeholder((1, 5, 9, 9), name="data")
    kernel = te.placeholder((64, 5, 3, 3), name="kernel")
    out = topi.nn.relu(topi.nn.conv2d_nchw(data, kernel, 1, 1, 1))
    func = te.create_prim_func([data, kernel, out])
    target = Target(kind="c", vector_bytes=64, vector_registers=registers)
    report = schedule_with_plans(func, target)
    scheduled = report.schedule.func
    tir = scheduled.script()
    (applied,) = rule_records(report)
    packed = 32 if registers == 32 else 16
    assert (applied.plan.channels, applied.plan.lanes) == (packed, 16)
    assert f"({64 // packed}, 5, 3, 3, {packed})" in tir  # the packed weight
    # the weight's packing copy (a weight passed at run time is packed at every call) runs
    # in parallel over output and input channels
    assert "for ax0_ax1_fused in T.parallel(320):" in tir
    x, w = rand(1, 5, 9, 9), rand(64, 5, 3, 3, seed=1)
    expected, got = np.zeros(out.shape, "float32"), np.zeros(out.shape, "float32")
    tessel.build(func)(x, w, expected)
    tessel.build(scheduled)(x, w, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
