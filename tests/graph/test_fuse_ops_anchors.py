"""FuseOps(max_anchors=N): chains of anchor operators (dense, conv2d, and softmax between two
products) joined by elementwise operators fuse into one Primitive function, at most N anchors
each; with `by_cost` only the chains the cost model accepts; the fused kernels, compiled to C,
compute what the unfused ones do."""

import numpy as np
import pytest
from graph_pass_checks import check_pass, random_inputs
from multi_anchor_models import (
    ATTENTION,
    ATTENTION_VIEWS,
    BIG_MLP,
    CONV_CHAIN,
    INVERTED_RESIDUAL,
    MLP,
)

from tessel import graph
from tessel.graph import Call, Function, InferType, parse
from tessel.graph.passes import FuseOps, default_pipeline
from tessel.graph.passes.fuse_ops import MAX_ANCHORS
from tessel.graph.passes.rewriter import is_primitive
from tessel.graph.traversal import post_order_exprs
from tessel.ir.transform import PassContext, Sequential


def _anchor_groups(mod):
    """The anchor operators of each Primitive function of `main`."""
    groups = []
    for expr in post_order_exprs(mod["main"]):
        if isinstance(expr, Function) and is_primitive(expr):
            names = [e.op.name for e in post_order_exprs(expr.body) if isinstance(e, Call)]
            groups.append([n for n in names if any(a in n for a in ("dense", "conv2d", "matmul"))])
    return sorted(groups, key=len)


def test_two_anchors_and_the_elementwise_ops_between_them_fuse():
    expected = """
    def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {
      %0 = fn (%p0: Tensor[(4, 8), float32], %p1: Tensor[(8, 8), float32], Primitive=1)
          -> Tensor[(4, 8), float32] {
        %1 = nn.dense(%p0, %p1);
        %2 = nn.relu(add(%1, 1f));
        %3 = nn.dense(%2, %p1);
        nn.relu(%3)
      };
      %4 = %0(%x, %w);
      %5 = fn (%p01: Tensor[(4, 8), float32], %p11: Tensor[(8, 8), float32], Primitive=1)
          -> Tensor[(4, 8), float32] {
        nn.dense(%p01, %p11)
      };
      %5(%4, %w)
    }"""
    check_pass(FuseOps(max_anchors=2), MLP, expected)


@pytest.mark.parametrize(
    ("max_anchors", "groups"),
    [
        (1, [["nn.dense"]] * 3),
        (2, [["nn.dense"], ["nn.dense"] * 2]),
        (3, [["nn.dense"] * 3]),
    ],
)
def test_max_anchors_bounds_each_function(max_anchors, groups):
    fused = FuseOps(max_anchors=max_anchors)(parse(MLP))
    assert _anchor_groups(fused) == groups


def test_an_anchor_read_twice_does_not_join_its_consumer():
    """The first product feeds two products: it post-dominates nothing, so it stays alone."""
    before = """
    def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {
      %0 = nn.dense(%x, %w);
      (nn.dense(%0, %w), nn.dense(%0, %w))
    }"""
    fused = FuseOps(max_anchors=3)(parse(before))
    assert _anchor_groups(fused) == [["nn.dense"]] * 3


@pytest.mark.parametrize(
    ("text", "anchors"),
    [
        (CONV_CHAIN, 2),
        (INVERTED_RESIDUAL, 3),
        (MLP, 3),
    ],
    ids=["conv3x3-conv3x3", "inverted-residual", "mlp"],
)
def test_multi_anchor_kernels_compile_to_the_unfused_results(text, anchors):
    mod = parse(text)
    inputs = random_inputs(mod, seed=2)
    unfused = graph.compile(mod)(*inputs)
    passes = [
        FuseOps(max_anchors=anchors) if isinstance(p, FuseOps) else p for p in default_pipeline()
    ]
    fused = Sequential(tuple(passes))(mod)
    assert max(len(g) for g in _anchor_groups(fused)) == anchors
    compiled = graph.compile(mod, passes=passes)
    np.testing.assert_allclose(compiled(*inputs), unfused, rtol=1e-4, atol=1e-4)


def test_softmax_between_two_products_chains_as_an_anchor():
    expected = """
    def @main(%q: Tensor[(12, 128, 32), float32], %k: Tensor[(12, 128, 32), float32],
              %v: Tensor[(12, 128, 32), float32], %mask: Tensor[(1, 1, 128), float32]) {
      %0 = fn (%p0: Tensor[(12, 128, 32), float32], %p1: Tensor[(12, 128, 32), float32],
               %p2: Tensor[(1, 1, 128), float32], %p3: Tensor[(12, 128, 32), float32],
               Primitive=1) -> Tensor[(12, 128, 32), float32] {
        %1 = nn.batch_matmul(%p0, %p1, transpose_b=True);
        %2 = multiply(%1, 0.17f);
        %3 = add(%2, %p2);
        %4 = nn.softmax(%3);
        nn.batch_matmul(%4, %p3, transpose_b=False)
      };
      %0(%q, %k, %mask, %v)
    }"""
    check_pass(FuseOps(max_anchors=3), ATTENTION, expected)


def test_with_one_anchor_softmax_stays_opaque():
    fused = FuseOps()(parse(ATTENTION))
    assert _anchor_groups(fused) == [[], ["nn.batch_matmul"], ["nn.batch_matmul"]]


@pytest.mark.parametrize(
    ("text", "fused_groups"),
    [
        (ATTENTION, [["nn.batch_matmul"] * 2]),
        (ATTENTION_VIEWS, [["nn.batch_matmul"] * 2]),
        (BIG_MLP, [["nn.dense"], ["nn.dense"]]),  # the weights would be re-read per row block
        (MLP, [["nn.dense"]] * 3),  # 4 rows: one row block, no parallel loop
        (CONV_CHAIN, [["nn.conv2d"], ["nn.conv2d"]]),  # not scheduled together
    ],
    ids=["attention", "attention-views", "big-mlp", "small-mlp", "conv-chain"],
)
def test_by_cost_fuses_only_the_chains_the_cost_model_accepts(text, fused_groups):
    fused = FuseOps(max_anchors=3, by_cost=True)(InferType()(parse(text)))
    assert _anchor_groups(fused) == fused_groups


def test_the_default_pipeline_fuses_attention_and_the_config_turns_it_off():
    mod = parse(ATTENTION)
    assert _anchor_groups(Sequential(tuple(default_pipeline()))(mod)) == [["nn.batch_matmul"] * 2]
    off = PassContext(config={MAX_ANCHORS: 1})
    groups = _anchor_groups(Sequential(tuple(default_pipeline()))(mod, off))
    assert groups == [[], ["nn.batch_matmul"], ["nn.batch_matmul"]]  # softmax on its own


@pytest.mark.parametrize("text", [ATTENTION, ATTENTION_VIEWS], ids=["attention", "views"])
def test_fused_attention_computes_what_the_unfused_kernels_do(text):
    mod = parse(text)
    inputs = random_inputs(mod, seed=3)
    unfused = graph.compile(mod, ctx=PassContext(config={MAX_ANCHORS: 1}))
    fused = graph.compile(mod)
    assert len(fused.plan.calls) < len(unfused.plan.calls)
    np.testing.assert_allclose(fused(*inputs), unfused(*inputs), rtol=1e-5, atol=1e-5)
