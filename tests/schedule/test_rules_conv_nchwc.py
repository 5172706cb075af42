"""The default schedule's rule for channel-blocked convolutions
(tessel.schedule.rules.conv_nchwc): topi.nn.conv2d_NCHWc and depthwise_conv2d_NCHWc, with a
bias and clip epilogue, keep their results on odd shapes (interpreter and C), tile as the rule
says, and their traces replay."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rules_testing import block_named, check_default_schedule, rule_records

from tessel import te, topi
from tessel.ir.target import Target
from tessel.schedule.rules import default_schedule, schedule_with_plans
from tessel.schedule.rules.conv_nchwc import (
    ConvNCHWcPlan,
    column_tile,
    match_conv_nchwc,
    row_cycles,
)
from tessel.testing import check_same_results

AVX512 = Target(kind="c", vector_bytes=64, vector_registers=32)


def _blocked_conv(n, c, f, size, k, stride, pad, ic_bn, oc_bn, depthwise=False):
    """conv2d_NCHWc (or depthwise) then a per-channel bias and clip, as AlterOpLayout leaves a
    model's conv + bias_add + relu6."""
    data = te.placeholder((n, c // ic_bn, size, size, ic_bn), name="data")
    if depthwise:
        kernel = te.placeholder((f // oc_bn, 1, k, k, 1, oc_bn), name="kernel")
        conv = topi.nn.depthwise_conv2d_NCHWc(
            data, kernel, stride, pad, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c"
        )
    else:
        kernel = te.placeholder((f // oc_bn, c // ic_bn, k, k, ic_bn, oc_bn), name="kernel")
        conv = topi.nn.conv2d_NCHWc(data, kernel, stride, pad, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
    bias = te.placeholder((f // oc_bn, 1, 1, oc_bn), name="bias")
    out = topi.clip(topi.add(conv, bias), 0.0, 6.0)
    return te.create_prim_func([data, kernel, bias, out])


CASES = {
    # name: (batch, in channels, out channels, size, kernel, stride, pad, ic_bn, oc_bn, depthwise)
    "3x3 16->32 at 7": (1, 16, 32, 7, 3, 1, 1, 16, 16, False),
    "1x1 8->16 at 13": (1, 8, 16, 13, 1, 1, 0, 8, 16, False),  # a prime width: 8 + a tail of 5
    "3x3 s2 4->8 at 9, batch 2": (2, 4, 8, 9, 3, 2, 1, 4, 8, False),
    "3x3 s2 3->16 at 11, ic_bn 1": (1, 3, 16, 11, 3, 2, 1, 1, 16, False),
    "1x1 16->48 at 1": (1, 16, 48, 1, 1, 1, 0, 16, 16, False),  # 3 chunks a tile
    "1x1 32->144 at 9": (1, 32, 144, 9, 1, 1, 0, 16, 16, False),  # 9 chunks, 3 a tile
    "depthwise 16 at 7": (1, 16, 16, 7, 3, 1, 1, 16, 16, True),
    "depthwise s2 8 at 13": (1, 8, 8, 13, 3, 2, 1, 8, 8, True),
    "depthwise 5x5 4 at 12": (1, 4, 4, 12, 5, 1, 2, 4, 4, True),
    "3x3 16->32 at 13": (1, 16, 32, 13, 3, 1, 1, 16, 16, False),  # 7 + a tail of 6
    "1x1 16->48 at 17": (1, 16, 48, 17, 1, 1, 0, 16, 16, False),  # 3 chunks: 5 + 5 + 5 + 2
    "depthwise 16 at 13": (1, 16, 16, 13, 3, 1, 1, 16, 16, True),  # 8 + a tail of 5
}
# Rows the rule tiles with a tail (column_tile), and the tile: its best dividing tile is 1.
TAILED = {
    "1x1 8->16 at 13": 8,
    "3x3 16->32 at 13": 7,
    "1x1 16->48 at 17": 5,
    "depthwise 16 at 13": 8,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_blocked_conv_keeps_results_and_its_trace_replays(case):
    # The scheduled kernel runs as C only: the interpreter, the reference, takes half a minute
    # over the largest case as it is, and as long again scheduled.
    check_default_schedule(_blocked_conv(*CASES[case]), AVX512, backends=("c",))


@pytest.mark.parametrize("case", sorted(CASES))
def test_blocked_conv_tiles_as_the_rule_says(case):
    n, c, f, size, k, stride, pad, ic_bn, oc_bn, depthwise = CASES[case]
    report = schedule_with_plans(_blocked_conv(*CASES[case]), AVX512)
    (applied,) = rule_records(report)
    plan = applied.plan
    width = (size + 2 * pad - k) // stride + 1
    chunks = f // oc_bn
    blocks = 1
    if not depthwise and oc_bn == 16:  # two channel blocks a tile, or three (48 channels)
        blocks = 2 if chunks % 2 == 0 else (3 if chunks % 3 == 0 else 1)
    tiles = (7, 8, 6, 5, 4, 3, 2, 1) if blocks == 2 else (8, 7, 6, 5, 4, 3, 2, 1)
    if blocks == 3:
        tiles = tuple(t for t in tiles if t <= 5)
    columns = TAILED.get(case, next(t for t in tiles if width % t == 0))
    # conv2d over blocks of channels keeps the zero padding as its own nest; depthwise, and
    # an input block of one channel, inline it (a guard per load)
    inlined = depthwise or ic_bn == 1
    assert isinstance(plan, ConvNCHWcPlan)
    assert (plan.channel_blocks, plan.columns, plan.inline_padding) == (blocks, columns, inlined)
    assert plan.unroll_window == depthwise
    tir = report.schedule.func.script()
    assert 'scope="local"' in tir  # the accumulators
    assert "T.min(T.max(" in tir or "T.max(T.min(" in tir  # clip, inlined into the write-back
    if pad:
        padded = size + 2 * pad
        assert (f"({n}, {c // ic_bn}, {padded}, {padded}, {ic_bn})" in tir) == (not inlined)
        assert ("T.if_then_else(" in tir.split("_init")[-1]) == inlined


@pytest.mark.parametrize(("width", "columns"), [(56, 7), (16, 8)])
def test_two_block_tiles_take_seven_columns_where_seven_divides_the_row(width, columns):
    """Two channel blocks of 8 columns are 16 accumulators, which gcc copies at each back edge
    (and spills): 7 columns where 7 divides the row too, else 8."""
    func = _blocked_conv(1, 16, 32, width, 1, 1, 0, 16, 16)
    (applied,) = rule_records(schedule_with_plans(func, AVX512))
    assert (applied.plan.channel_blocks, applied.plan.columns) == (2, columns)


@pytest.mark.parametrize(
    ("width", "vectors", "tile"),
    [
        (13, 2, 7),  # 7 + 6 (8 + 5 models the same; 7 comes first for two vectors a column)
        (13, 1, 8),  # 8 + 5
        (27, 2, 7),  # 7 + 7 + 7 + 6, not 9 tiles of 3 (6 accumulators: latency-bound)
        (17, 2, 6),  # 6 + 6 + 5
        (111, 2, 7),
        (55, 2, 5),  # 11 tiles of 5 model as 8 tiles of 7 (+6): the dividing tile is kept
        (56, 2, 7),
        (9, 1, 8),  # 8 + 1: 3 tiles of 3 accumulators wait 3 latencies
        (9, 3, 3),  # 9 accumulators a tile of 3 columns: no tail needed
        (4, 2, 4),
        (1, 2, 1),
    ],
)
def test_column_tile_takes_a_tail_only_where_the_model_says_it_is_cheaper(width, vectors, tile):
    tiles = (7, 8, 6, 5, 4, 3, 2, 1) if vectors == 2 else (8, 7, 6, 5, 4, 3, 2, 1)
    assert column_tile(width, tiles, vectors) == tile


@given(st.integers(1, 300), st.integers(1, 3))
def test_column_tile_is_never_modelled_slower_than_the_best_dividing_tile(width, vectors):
    tiles = (8, 7, 6, 5, 4, 3, 2, 1)
    dividing = next(t for t in tiles if width % t == 0)
    tile = column_tile(width, tiles, vectors)
    assert row_cycles(width, tile, vectors) <= row_cycles(width, dividing, vectors)
    assert tile == dividing or row_cycles(width, tile, vectors) < 0.9 * row_cycles(
        width, dividing, vectors
    )


def test_a_general_multiplier_depthwise_is_not_the_rule_s():
    """Two filters per channel read input lane k // 2 at output lane k: not a vector of the
    data, so the rule leaves it to the generic schedule (which keeps its results)."""
    data = te.placeholder((1, 1, 6, 6, 4), name="data")
    kernel = te.placeholder((2, 1, 3, 3, 1, 4), name="kernel")
    out = topi.nn.depthwise_conv2d_NCHWc(data, kernel, 1, 1, 1, "NCHW4c", "NCHW4c")
    func = te.create_prim_func([data, kernel, out])
    block = block_named(func, "DepthwiseConv2d")
    assert not match_conv_nchwc(block)
    check_same_results(func, default_schedule(func, AVX512).func, rtol=1e-5, atol=1e-5)


def test_blocked_conv_matches_torch():
    """The scheduled kernel against PyTorch's NCHW convolution, blocks transformed by NumPy."""
    torch = pytest.importorskip("torch")
    from tessel import build
    from tessel.topi.layout import transform_array

    func = default_schedule(_blocked_conv(1, 16, 32, 9, 3, 2, 1, 8, 16), AVX512).func
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 9, 9), dtype=np.float32)
    w = rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
    b = rng.standard_normal(32, dtype=np.float32)
    out = np.empty((1, 2, 5, 5, 16), np.float32)
    build(func)(
        transform_array(x, "NCHW", "NCHW8c"),
        transform_array(w, "OIHW", "OIHW8i16o"),
        b.reshape(2, 1, 1, 16),
        out,
    )
    conv = torch.nn.functional.conv2d
    expected = conv(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), 2, 1)
    expected = expected.clamp(0, 6).numpy()
    np.testing.assert_allclose(
        transform_array(out, "NCHW16c", "NCHW"), expected, rtol=1e-4, atol=1e-4
    )
