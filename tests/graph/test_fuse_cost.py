"""The multi-anchor cost model (tessel.graph.passes.fuse_cost): a chain of products is one
kernel only where its row-blocked schedule moves fewer bytes and still has a parallel loop for
every thread; convolution chains and chains that do not start and end with a product never."""

import pytest
from multi_anchor_models import ATTENTION, BIG_MLP, CONV_CHAIN, INVERTED_RESIDUAL, MLP

from tessel.graph import Call, InferType, parse
from tessel.graph.passes.fuse_cost import chain_pays
from tessel.graph.traversal import post_order_exprs
from tessel.schedule.rules.anchor_chain import block_rows


def _calls(text):
    mod = InferType()(parse(text))
    return [e for e in post_order_exprs(mod["main"]) if isinstance(e, Call)]


@pytest.mark.parametrize(
    ("text", "pays"),
    [
        (ATTENTION, True),  # K and V per head are 16 KiB: re-read per row block from cache
        (BIG_MLP, False),  # 2.3 MB weights re-read by 16 row blocks
        (MLP, False),  # 4 rows: one row block, no parallel loop
        (CONV_CHAIN, False),
        (INVERTED_RESIDUAL, False),
    ],
    ids=["attention", "big-mlp", "small-mlp", "conv-chain", "inverted-residual"],
)
def test_chain_pays(text, pays):
    assert chain_pays(_calls(text)) is pays


def test_a_chain_must_start_and_end_with_a_product():
    text = """
    def @main(%x: Tensor[(256, 64), float32], %w: Tensor[(64, 64), float32]) {
      nn.softmax(nn.dense(nn.softmax(%x), %w))
    }"""
    assert not chain_pays(_calls(text))


@pytest.mark.parametrize(
    ("rows", "row_bytes", "expected"),
    [
        (128, 512, 32),  # 16 KiB of scores per block
        (64, 256, 64),  # all rows fit
        (128, 6144, 8),  # wide rows: the smallest tile
        (13, 512, 13),  # no multiple of 8 divides 13: one block
    ],
)
def test_block_rows(rows, row_bytes, expected):
    assert block_rows(rows, row_bytes, 8) == expected  # 8-row GEMM tiles (AVX-512)
