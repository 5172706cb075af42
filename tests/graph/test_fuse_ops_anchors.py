"""FuseOps(max_anchors=N): chains of anchor operators (dense, conv2d) joined by elementwise
operators fuse into one Primitive function, at most N anchors each; the fused kernels, compiled
to C, compute what the unfused ones do."""

import numpy as np
import pytest
from graph_pass_checks import check_pass, random_inputs

from tessel import graph
from tessel.graph import Call, Function, parse
from tessel.graph.passes import FuseOps, default_pipeline
from tessel.graph.passes.rewriter import is_primitive
from tessel.graph.traversal import post_order_exprs
from tessel.ir.transform import Sequential

MLP = """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(add(%0, 1f));
  %2 = nn.dense(%1, %w);
  %3 = nn.relu(%2);
  nn.dense(%3, %w)
}"""


def _anchor_groups(mod):
    """The anchor operators of each Primitive function of `main`."""
    groups = []
    for expr in post_order_exprs(mod["main"]):
        if isinstance(expr, Function) and is_primitive(expr):
            names = [e.op.name for e in post_order_exprs(expr.body) if isinstance(e, Call)]
            groups.append([n for n in names if "dense" in n or "conv2d" in n])
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


CONV_CHAIN = """
def @main(%x: Tensor[(1, 8, 12, 12), float32], %w1: Tensor[(8, 8, 3, 3), float32],
          %w2: Tensor[(8, 8, 3, 3), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]));
  nn.relu(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]))
}"""

INVERTED_RESIDUAL = """
def @main(%x: Tensor[(1, 8, 10, 10), float32], %expand: Tensor[(32, 8, 1, 1), float32],
          %depthwise: Tensor[(32, 1, 3, 3), float32], %project: Tensor[(8, 32, 1, 1), float32]) {
  %0 = clip(nn.conv2d(%x, %expand), a_min=0f, a_max=6f);
  %1 = clip(nn.conv2d(%0, %depthwise, padding=[1, 1, 1, 1], groups=32), a_min=0f, a_max=6f);
  %2 = nn.conv2d(%1, %project);
  add(%2, %x)
}"""


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
