"""The blocked-conv rule (tessel.schedule.rules.conv_nchwc) on grouped convolutions
(topi.nn.group_conv2d_NCHWc, what AlterOpLayout makes of RegNet's and ResNeXt's grouped 3x3s):
results kept (interpreter and C) and traces replayed, in each way the input blocks and the
groups meet; the plan's choices for a grouped conv (two blocks a tile, kw innermost, the
padding inlined when strided); groups that straddle input blocks left to the generic rule."""

import pytest
from rules_testing import block_named, check_default_schedule, rule_records

from tessel import te, topi
from tessel.ir.target import Target
from tessel.schedule.rules import default_schedule, schedule_with_plans
from tessel.schedule.rules.conv_nchwc import ConvNCHWcPlan, match_conv_nchwc
from tessel.testing import check_same_results

AVX512 = Target(kind="c", vector_bytes=64, vector_registers=32)


def _grouped_conv(c, f, groups, size, stride, ic_bn, k_bn, oc_bn):
    """group_conv2d_NCHWc (3x3, padding 1) then a per-channel bias and relu, as AlterOpLayout
    leaves a grouped conv + bias_add + relu."""
    data = te.placeholder((1, c // ic_bn, size, size, ic_bn), name="data")
    kernel = te.placeholder((f // oc_bn, c // groups // k_bn, 3, 3, k_bn, oc_bn), name="kernel")
    conv = topi.nn.group_conv2d_NCHWc(
        data, kernel, stride, 1, 1, groups, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c"
    )
    bias = te.placeholder((f // oc_bn, 1, 1, oc_bn), name="bias")
    out = topi.nn.relu(topi.add(conv, bias))
    return te.create_prim_func([data, kernel, bias, out])


CASES = {
    # name: (channels, filters, groups, size, stride, ic_bn, k_bn, oc_bn)
    "32 in groups of 8, blocks of 16, at 9": (32, 32, 4, 9, 1, 16, 8, 8),
    "48 in groups of 8, blocks of 16, stride 2 at 11": (48, 48, 6, 11, 2, 16, 8, 8),
    "24 in groups of 8, blocks of 8, at 7": (24, 24, 3, 7, 1, 8, 8, 8),  # 3 chunks: one a tile
    "32 in groups of 16, blocks of 8, at 6": (32, 32, 2, 6, 1, 8, 8, 16),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_grouped_conv_keeps_results_and_its_trace_replays(case):
    check_default_schedule(_grouped_conv(*CASES[case]), AVX512)


@pytest.mark.parametrize("case", sorted(CASES))
def test_grouped_conv_tiles_as_the_rule_says(case):
    """Two output blocks a tile where the blocks pair up (their groups share the input's
    cache lines), kw the innermost reduction and unrolled (an input element loaded once for
    the columns that read it), ic_inner not stepped, and the zero padding inlined only for a
    strided conv."""
    c, f, groups, size, stride, ic_bn, k_bn, oc_bn = CASES[case]
    (applied,) = rule_records(schedule_with_plans(_grouped_conv(*CASES[case]), AVX512))
    plan = applied.plan
    assert isinstance(plan, ConvNCHWcPlan)
    assert plan.channel_blocks == (2 if (f // oc_bn) % 2 == 0 else 1)
    assert (plan.kw_innermost, plan.unroll_kw, plan.ic_steps) == (True, True, 1)
    assert plan.inline_padding == (stride > 1)


def test_a_regular_conv_keeps_its_plan():
    """An ungrouped conv reads the same input for every output block: no kw innermost."""
    data = te.placeholder((1, 2, 9, 9, 16), name="data")
    kernel = te.placeholder((2, 2, 3, 3, 16, 16), name="kernel")
    out = topi.nn.conv2d_NCHWc(data, kernel, 1, 1, 1, "NCHW16c", "NCHW16c")
    (applied,) = rule_records(schedule_with_plans(te.create_prim_func([data, kernel, out]), AVX512))
    assert (applied.plan.kw_innermost, applied.plan.ic_steps) == (False, 2)


def test_groups_across_input_blocks_are_left_to_the_generic_rule():
    """Groups of 6 channels over blocks of 4: the input lane is a channel modulo 4, not a
    vector of the data the rule can broadcast; the generic schedule keeps the results."""
    func = _grouped_conv(12, 8, 2, 6, 1, 4, 2, 4)
    block = block_named(func, "conv2d_NCHWc")
    assert not match_conv_nchwc(block)
    check_same_results(func, default_schedule(func, AVX512).func, rtol=1e-4, atol=1e-4)
