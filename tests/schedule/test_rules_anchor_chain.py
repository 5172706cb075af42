"""The default schedule's rule for chains of anchors in one kernel
(tessel.schedule.rules.anchor_chain): attention (QK^T, softmax, PV) and dense -> relu -> dense
are computed by row blocks of the last product under one parallel loop, with each product
register-tiled; conv chains by row blocks of the last convolution, with the halo rows; all keep
their results (interpreter and C) on even and odd shapes."""

import pytest
from rules_testing import compile_and_check, model, rand

from tessel import te, topi
from tessel.graph.passes import FuseOps, default_pipeline
from tessel.ir.functor import post_order
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.anchor_chain import gemm_chain
from tessel.testing import check_same_results
from tessel.tir.block import Block
from tessel.tir.stmt import For, ForKind


def _attention(heads, rows, width, scale=0.25):
    q = te.placeholder((heads, rows, width), name="q")
    k = te.placeholder((heads, rows, width), name="k")
    v = te.placeholder((heads, rows, width), name="v")
    scores = topi.nn.batch_matmul(q, k, transpose_b=True)
    scaled = topi.multiply(scores, scale)
    out = topi.nn.batch_matmul(topi.nn.softmax(scaled), v, transpose_b=False)
    return te.create_prim_func([q, k, v, out])


def _mlp(rows, width, hidden):
    x = te.placeholder((rows, width), name="x")
    w1 = te.placeholder((hidden, width), name="w1")
    w2 = te.placeholder((width, hidden), name="w2")
    return te.create_prim_func([x, w1, w2, topi.nn.dense(topi.nn.relu(topi.nn.dense(x, w1)), w2)])


CHAINS = {
    "attention 4x64x32": lambda: _attention(4, 64, 32),
    "attention 3x13x8 (rows no tile divides)": lambda: _attention(3, 13, 8),
    "mlp 48x16x40": lambda: _mlp(48, 16, 40),
    "mlp 19x7x33": lambda: _mlp(19, 7, 33),
}


def _outer_loops(func):
    """The loops directly under the function's root block."""
    body = func.body.block.body if hasattr(func.body, "block") else func.body
    stmts = getattr(body, "seq", [body])
    return [s for s in stmts if isinstance(s, For)]


def _blocks_under(loop):
    return {node.name_hint for node in post_order(loop) if isinstance(node, Block)}


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_a_chain_keeps_its_results_and_its_trace_replays(chain):
    func = CHAINS[chain]()
    sch = default_schedule(func)
    check_same_results(func, sch.func, rtol=1e-4, atol=1e-4)
    replayed = Schedule(func)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)


@pytest.mark.parametrize("chain", ["attention 4x64x32", "mlp 48x16x40"])
def test_every_anchor_of_a_chain_runs_under_one_parallel_loop(chain):
    func = CHAINS[chain]()
    anchors = gemm_chain(Schedule(func))
    assert len(anchors) == 2
    scheduled = default_schedule(func).func
    parallel = [loop for loop in _outer_loops(scheduled) if loop.kind == ForKind.PARALLEL]
    holding = [loop for loop in parallel if set(anchors) <= _blocks_under(loop)]
    assert len(holding) == 1, scheduled.script()
    if chain.startswith("attention"):
        # softmax's reductions are computed per row block too, between the two products
        assert {"T_max", "T_sum"} <= _blocks_under(holding[0])


def test_attention_row_blocks_keep_the_scores_block_in_l1():
    """64 rows of 64 scores (256 bytes a row): blocks of 64 rows (16 KiB) per head, so the
    parallel loop runs heads x 1 iterations; 128 scores a row at 128 rows: 32-row blocks."""
    for rows, iterations in ((64, 4), (128, 4 * 4)):
        scheduled = default_schedule(_attention(4, rows, 32)).func
        parallel = [loop for loop in _outer_loops(scheduled) if loop.kind == ForKind.PARALLEL]
        extents = sorted(loop.extent.value for loop in parallel)
        assert iterations in extents, scheduled.script()


def test_a_function_with_one_product_has_no_chain():
    x = te.placeholder((8, 8), name="x")
    w = te.placeholder((8, 8), name="w")
    func = te.create_prim_func([x, w, topi.nn.softmax(topi.nn.dense(x, w))])
    assert gemm_chain(Schedule(func)) == []


CONV_CHAIN = """
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]));
  nn.relu(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]))"""

INVERTED_RESIDUAL = """
  %0 = clip(nn.conv2d(%x, %expand), a_min=0f, a_max=6f);
  %1 = clip(nn.conv2d(%0, %depthwise, padding=[1, 1, 1, 1], groups=64), a_min=0f, a_max=6f);
  add(nn.conv2d(%1, %project), %x)"""


@pytest.mark.parametrize(
    ("body", "params", "weights"),
    [
        (
            CONV_CHAIN,
            "%x: Tensor[(1, 16, 12, 12), float32], %w1: Tensor[(16, 16, 3, 3), float32], "
            "%w2: Tensor[(16, 16, 3, 3), float32]",
            {"w1": (16, 16, 3, 3), "w2": (16, 16, 3, 3)},
        ),
        (
            INVERTED_RESIDUAL,
            "%x: Tensor[(1, 16, 10, 10), float32], %expand: Tensor[(64, 16, 1, 1), float32], "
            "%depthwise: Tensor[(64, 1, 3, 3), float32], %project: Tensor[(16, 64, 1, 1), float32]",
            {"expand": (64, 16, 1, 1), "depthwise": (64, 1, 3, 3), "project": (16, 64, 1, 1)},
        ),
    ],
    ids=["conv3x3-conv3x3", "inverted-residual"],
)
def test_a_fused_conv_chain_runs_by_row_blocks_with_their_halo(body, params, weights):
    """Every convolution of the fused kernel runs under the last one's (batch, row block)
    loop, the rows of the windows' halo recomputed per block, and the results match."""
    mod = model(body, params)
    shape = [int(d) for d in mod["main"].params[0].type_annotation.shape]
    inputs = {"x": rand(*shape, seed=1)}
    constants = {name: rand(*s, seed=k + 2) * 0.3 for k, (name, s) in enumerate(weights.items())}
    passes = [FuseOps(max_anchors=3) if isinstance(p, FuseOps) else p for p in default_pipeline()]
    tir = compile_and_check(mod, inputs, constants, passes=passes)
    fused = next(f for f in tir.split("@T.prim_func") if f.count('T.block("conv2d_NCHWc') >= 2)
    # the last parallel loop holds both convolutions (before it: the input's zero padding)
    shared = fused[fused.rindex("T.parallel(") :]
    assert 'T.block("conv2d_NCHWc")' in shared
    assert 'T.block("conv2d_NCHWc_1")' in shared
    assert "T.where(" in shared  # the halo rows kept within the image
