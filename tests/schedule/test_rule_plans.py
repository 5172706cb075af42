"""The schedule rules as plans (tessel.schedule.rules.plan, issue 32): each rule's `plan_*` chooses
every knob as data a test can read (tiles, packing, padding, lanes from the dtype and the target,
prefetch, parallel loops), `apply_*` applies a plan (the rule's or a changed one, as a tuner
would) and reports the steps the schedule refused; every applied plan keeps the unscheduled
results in the interpreter and in C."""

from dataclasses import replace

import pytest

from tessel import te, topi
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.schedule.rules.conv import ConvTilePlan, apply_conv, plan_conv
from tessel.schedule.rules.conv_nchwc import ConvNCHWcPlan, apply_conv_nchwc, plan_conv_nchwc
from tessel.schedule.rules.conv_rows import DepthwiseLoopsPlan, DepthwiseRowsPlan, GroupedRowsPlan
from tessel.schedule.rules.default import schedule_with_plans
from tessel.schedule.rules.gemm import (
    PREFETCH_BYTES,
    GemmPlan,
    OperandPacking,
    apply_gemm,
    plan_gemm,
    schedule_gemm,
)
from tessel.schedule.rules.loops import LoopsPlan, schedule_loops
from tessel.schedule.rules.plan import LAYOUT_REWRITE_PREPROC, host_target
from tessel.schedule.rules.reduction import RowReductionPlan, plan_row_reduction
from tessel.schedule.rules.window import WindowPlan, plan_window_reduction
from tessel.testing import check_schedule
from tessel.tir.block import Block

AVX512 = Target(vector_bytes=64, vector_registers=32)
AVX2 = Target()  # 32-byte vectors, 16 registers
SSE = Target(vector_bytes=16)


def _dense(m: int, k: int, n: int, dtype: str = "float32"):
    a = te.placeholder((m, k), dtype, name="a")
    w = te.placeholder((n, k), dtype, name="w")
    return te.create_prim_func([a, w, topi.nn.dense(a, w)])


def _block(func, name: str) -> Block:
    sch = Schedule(func)
    return sch.block(sch.get_block(name)).block


@pytest.mark.parametrize(
    ("shape", "target", "expected"),
    [
        # 44 rows: tiles of 8 (padded to 48); W[j, k] strided along j: packed into panels
        ((44, 384, 1536), AVX512, GemmPlan("T_dense", 8, 32, 16, OperandPacking(1, 0, 1, 32),
                                           (8, 1, 1))),
        # AVX2: 6 rows of two 8-lane vectors (12 of 16 registers)
        ((44, 384, 1536), AVX2, GemmPlan("T_dense", 6, 16, 8, OperandPacking(1, 0, 1, 16),
                                         (6, 1, 1))),
        # SSE: 3 rows of four 4-lane vectors
        ((44, 384, 1536), SSE, GemmPlan("T_dense", 3, 16, 4, OperandPacking(1, 0, 1, 16),
                                        (3, 1, 1))),
        # a short reduction: one vector of columns; 7 rows: all of them
        ((7, 32, 100), AVX512, GemmPlan("T_dense", 7, 16, 16, OperandPacking(1, 0, 1, 16),
                                        (1, 16, 1))),
        # one row (a GEMV): its stream of B prefetched
        ((1, 512, 256), AVX512, GemmPlan("T_dense", 1, 32, 16, OperandPacking(1, 0, 1, 32),
                                         (1, 1, 1), PREFETCH_BYTES)),
    ],
    ids=["avx512", "avx2", "sse", "short-reduction", "gemv"],
)  # fmt: skip
def test_gemm_plan_chooses_the_tile_packing_padding_and_prefetch(shape, target, expected):
    assert plan_gemm(_block(_dense(*shape), "T_dense"), target) == expected


@pytest.mark.parametrize(
    ("target", "dtype", "lanes", "columns"),
    [(AVX512, "float32", 16, 32), (AVX512, "float64", 8, 16), (AVX2, "float32", 8, 16),
     (AVX2, "float64", 4, 8), (SSE, "float32", 4, 16)],
)  # fmt: skip
def test_gemm_lanes_come_from_the_dtype_and_the_target(target, dtype, lanes, columns):
    """A vector holds the target's bytes of the output's dtype; a row of the tile holds 128
    bytes where 32 registers hold 8 such rows, else 64 (float64 with AVX-512: 16 columns,
    two vectors; 32 spilled and ran 10x slower)."""
    plan = plan_gemm(_block(_dense(16, 128, 64, dtype), "T_dense"), target)
    assert plan is not None
    assert (plan.lanes, plan.columns) == (lanes, columns)


def test_no_target_means_this_machine_for_every_rule():
    dense = _block(_dense(16, 128, 64), "T_dense")
    assert plan_gemm(dense) == plan_gemm(dense, host_target())
    softmax = _softmax((4, 100))
    sch = Schedule(softmax)
    assert plan_row_reduction(sch, "T_max") == plan_row_reduction(sch, "T_max", host_target())


def test_a_changed_gemm_plan_applies_and_keeps_the_results():
    """The seam a tuner uses: a plan with other knobs (4 rows of one vector, no packing, a
    parallel loop of the caller's) is applied as given."""
    func = _dense(13, 129, 40)

    def steps(sch):
        block = sch.get_block("T_dense")
        plan = plan_gemm(sch.block(block).block, AVX512)
        changed = replace(plan, rows=4, columns=16, packing=None, padding=(4, 16, 1))
        applied = apply_gemm(sch, block, changed)
        assert applied.plan == changed and applied.refused == ()
        assert {"T_dense", "T_dense_init"} <= applied.blocks

    sch = check_schedule(func, steps)
    script = sch.func.script()
    assert "T.unroll(4)" in script and "T.vectorized(16)" in script
    assert "_global" not in script  # nothing packed


def test_refused_steps_are_reported_and_the_results_kept():
    """A GEMM whose consumer is a reduction: inlining the consumer into the tile's write-back
    is refused, reported with its rule, and the rest of the plan applied."""
    a = te.placeholder((13, 129), name="a")
    w = te.placeholder((40, 129), name="w")
    func = te.create_prim_func([a, w, topi.sum(topi.nn.dense(a, w), -1)])
    records = []

    def steps(sch):
        records.append(schedule_gemm(sch, "T_dense", AVX512))

    check_schedule(func, steps)
    (applied,) = records
    (refusal,) = applied.refused
    assert (refusal.primitive, refusal.rule) == (
        "reverse_compute_inline",
        "reverse_compute_inline.reduction",
    )
    assert "`T_sum` is a reduction" in refusal.message
    assert {"T_dense", "T_dense_init"} <= applied.blocks


def _conv(c, size, f, k, stride=1, groups=1):
    data = te.placeholder((1, c, size, size), name="data")
    kernel = te.placeholder((f, c // groups, k, k), name="kernel")
    if groups == 1:
        out = topi.nn.conv2d_nchw(data, kernel, stride, k // 2, 1)
    else:
        out = topi.nn.group_conv2d_nchw(data, kernel, stride, k // 2, 1, groups)
    return te.create_prim_func([data, kernel, out])


def _depthwise(c, size, stride=1):
    data = te.placeholder((1, c, size, size), name="data")
    kernel = te.placeholder((c, 1, 3, 3), name="kernel")
    return te.create_prim_func(
        [data, kernel, topi.nn.depthwise_conv2d_nchw(data, kernel, stride, 1, 1)]
    )


def _conv_block(func) -> Block:
    names = [n for n in _names(func) if n not in ("root",) and not n.startswith(("pad", "data"))]
    return _block(func, names[-1])


def _names(func) -> list[str]:
    from tessel.schedule.state import block_names

    return block_names(func)


@pytest.mark.parametrize(
    ("make", "kind", "knobs"),
    [
        # conv2d: 32 channels (two vectors) by the columns the cost model picks for 14
        (lambda: _conv(4, 14, 64, 3), ConvTilePlan, {"channels": 32, "columns": 7, "lanes": 16,
                                                     "pack_weight": True}),
        # grouped with 8 output channels a group: the conv2d tile over one group's channels
        (lambda: _conv(32, 14, 32, 3, groups=4), ConvTilePlan, {"channels": 8}),
        # narrow groups, stride 2: the row is the vector, the input laid out by column parity
        (lambda: _conv(64, 14, 64, 3, 2, groups=16), GroupedRowsPlan, {"channels": 16, "lanes": 16,
                                                                       "split_row": False,
                                                                       "stride": 2}),
        # depthwise on long rows: the row is the vector, tiles of 4 rows
        (lambda: _depthwise(8, 32), DepthwiseRowsPlan, {"rows": 4, "lanes": 16}),
        # depthwise on 7x7: the input in blocks of 16 channels, the plain loops if refused
        (lambda: _depthwise(64, 7), ConvTilePlan, {"channels": 16, "data_blocks": 16,
                                                   "fallback": DepthwiseLoopsPlan("DepthwiseConv2d")}),
    ],
    ids=["conv2d", "grouped-wide", "grouped-narrow-stride2", "depthwise-rows", "depthwise-7x7"],
)  # fmt: skip
def test_conv_plan_picks_the_variant_and_its_knobs(make, kind, knobs):
    func = make()
    plan = plan_conv(_conv_block(func), AVX512)
    assert isinstance(plan, kind)
    assert {name: getattr(plan, name) for name in knobs} == knobs

    def steps(sch):
        applied = apply_conv(sch, sch.get_block(plan.block), plan)
        assert plan.block in applied.blocks

    check_schedule(func, steps, rtol=1e-4, atol=1e-4, backends=("c",))


def test_a_depthwise_fallback_plan_applies_on_its_own():
    func = _depthwise(64, 7)
    plan = plan_conv(_conv_block(func), AVX512)
    assert isinstance(plan, ConvTilePlan) and plan.fallback is not None

    def steps(sch):
        applied = apply_conv(sch, sch.get_block(plan.block), plan.fallback)
        assert applied.plan == plan.fallback and plan.block in applied.blocks

    check_schedule(func, steps, rtol=1e-4, atol=1e-4)


def test_a_conv_weight_copy_is_marked_as_a_packing_stage():
    """LayoutRewrite lifts the copies the rules mark (LAYOUT_REWRITE_PREPROC), no others."""
    func = _conv(16, 14, 64, 3)
    report = schedule_with_plans(func, AVX512)
    sch = report.schedule
    copy = sch.block(sch.get_block("kernel_global")).block
    assert copy.annotations.get(LAYOUT_REWRITE_PREPROC) is True


def _nchwc(c, f, size, k, ic_bn, oc_bn, depthwise=False):
    data = te.placeholder((1, c // ic_bn, size, size, ic_bn), name="data")
    if depthwise:
        kernel = te.placeholder((f // oc_bn, 1, k, k, 1, oc_bn), name="kernel")
        conv = topi.nn.depthwise_conv2d_NCHWc(
            data, kernel, 1, k // 2, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c"
        )
    else:
        kernel = te.placeholder((f // oc_bn, c // ic_bn, k, k, ic_bn, oc_bn), name="kernel")
        conv = topi.nn.conv2d_NCHWc(data, kernel, 1, k // 2, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
    return te.create_prim_func([data, kernel, conv])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # two channel blocks a tile, 7 columns (gcc keeps 14 accumulators in registers), ic
        # two steps an iteration
        ((32, 32, 14, 3, 16, 16), ConvNCHWcPlan("", 2, 1, 7, ic_steps=2)),
        # a row shorter than the tile: several rows a tile
        ((32, 32, 4, 3, 16, 16), ConvNCHWcPlan("", 2, 2, 4, ic_steps=2)),
        # three input channels in blocks of one: kw unrolled, the padding inlined
        ((3, 32, 16, 3, 1, 16), ConvNCHWcPlan("", 2, 1, 8, unroll_kw=True, inline_padding=True)),
        # depthwise: one block a tile, the window unrolled, the padding inlined
        ((32, 32, 14, 3, 16, 16, True),
         ConvNCHWcPlan("", 1, 1, 7, unroll_window=True, inline_padding=True)),
    ],
    ids=["conv2d", "short-rows", "first-conv", "depthwise"],
)  # fmt: skip
def test_blocked_conv_plan(args, expected):
    func = _nchwc(*args)
    block = _conv_block(func)
    plan = plan_conv_nchwc(block, AVX512)
    assert plan == replace(expected, block=block.name_hint)

    def steps(sch):
        applied = apply_conv_nchwc(sch, sch.get_block(plan.block), plan)
        assert plan.block in applied.blocks

    check_schedule(func, steps, rtol=1e-4, atol=1e-4, backends=("c",))


def _softmax(shape):
    x = te.placeholder(shape, name="x")
    return te.create_prim_func([x, topi.nn.softmax(x, -1)])


def test_row_reduction_and_window_plans_name_their_blocks():
    report = schedule_with_plans(_softmax((4, 100)), AVX512)
    (applied,) = report.applied
    assert applied.plan == RowReductionPlan(
        "T_max", ("T_max", "T_sum"), ("T_softmax_exp",), "T_softmax_norm", 1, 64
    )
    x = te.placeholder((1, 8, 16, 16), name="x")
    pool = te.create_prim_func([x, topi.nn.pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")])
    assert plan_window_reduction(_block(pool, "pool_max")) == WindowPlan("pool_max", 4)


def test_blocks_no_rule_matches_get_the_default_loops_plan():
    x = te.placeholder((4, 8), name="x")
    func = te.create_prim_func([x, topi.nn.relu(x)])
    (applied,) = schedule_with_plans(func, AVX512).applied
    assert applied.plan == LoopsPlan("T_relu", parallel=1, vectorize=True)
    assert plan_gemm(_block(func, "T_relu"), AVX512) is None


def test_the_default_loops_keep_the_loop_around_a_short_vector_serial():
    """An NCHW8c map scaled per channel (an SE block): a vector of 8 channels, so the width
    loop stays a plain loop inside the parallel (n, c, h), where the parallel loops have work
    enough for the cores; a map of 2 rows keeps them all parallel, and a long vector too."""
    x = te.placeholder((1, 4, 6, 5, 8), name="x")
    scale = te.placeholder((1, 4, 1, 1, 8), name="scale")
    func = te.create_prim_func([x, scale, topi.multiply(x, scale)])
    (applied,) = schedule_with_plans(func, AVX512).applied
    assert applied.plan == LoopsPlan("T_multiply", 3, vectorize=True)
    check_schedule(func, lambda sch: schedule_loops(sch, "T_multiply"))
    small = te.placeholder((1, 2, 1, 5, 8), name="small")
    (applied,) = schedule_with_plans(
        te.create_prim_func([small, topi.nn.relu(small)]), AVX512
    ).applied
    assert applied.plan.parallel == 4
    wide = te.placeholder((4, 6, 5, 64), name="wide")
    (applied,) = schedule_with_plans(
        te.create_prim_func([wide, topi.nn.relu(wide)]), AVX512
    ).applied
    assert applied.plan.parallel == 3


def test_the_default_loops_fuse_unit_loops_into_the_vector_and_stop_at_a_reduction():
    """NCHW to NCHW1c: the trailing unit axis joins the vector loop; a sum over the first and
    last axes (no other rule's) makes only the loop before its reductions parallel, and none a
    vector."""
    x = te.placeholder((2, 3, 5), name="x")
    unit = te.create_prim_func([x, topi.reshape(x, (2, 3, 5, 1))])
    (applied,) = schedule_with_plans(unit, AVX512).applied
    assert applied.plan == LoopsPlan(applied.plan.block, 2, vectorize=True, unit_loops=1)
    middle = te.create_prim_func([x, topi.sum(x, (0, 2))])
    (applied,) = schedule_with_plans(middle, AVX512).applied
    assert applied.plan == LoopsPlan(applied.plan.block, 1, vectorize=False)
    for func in (unit, middle):
        check_schedule(func, lambda sch: schedule_loops(sch, _names(sch.func)[1]))
