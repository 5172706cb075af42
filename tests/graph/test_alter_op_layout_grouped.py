"""AlterOpLayout on grouped convolutions: a grouped conv becomes a grouped contrib_conv2d_NCHWc
that reads its producer's blocks and writes blocks lying in one group, so RegNet's bottleneck
has no transform between its convs (Before/Expected); the producer's padded channels become
zero groups (compiled against the evaluator); an SE scale times the map takes the map's blocks."""

import numpy as np
from alter_op_layout_testing import AVX512, main_module

import tessel.graph as graph
from tessel.graph import Call, InferType, evaluate
from tessel.graph.passes import AlterOpLayout
from tessel.graph.traversal import post_order_exprs
from tessel.ir.structural import assert_structural_equal

GROUPED_PARAMS = (
    "%x: Tensor[(1, 16, 8, 8), float32], %w1: Tensor[(32, 16, 1, 1), float32], "
    "%w2: Tensor[(32, 8, 3, 3), float32], %w3: Tensor[(16, 32, 1, 1), float32]"
)
GROUPED_BEFORE = """
  %0 = nn.conv2d(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, %w2, padding=[1, 1, 1, 1], groups=4);
  %3 = nn.relu(%2);
  nn.conv2d(%3, %w3)
"""


def test_a_grouped_conv_reads_and_leaves_blocks_between_its_1x1_convs():
    """RegNet's bottleneck: the grouped 3x3 (groups of 8) reads the 1x1 conv's blocks of 16,
    two groups a block, writes blocks of 8 (one group each), and the next 1x1 conv reads
    those as they are: no transform between the three."""
    expected = """
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
      %1 = layout_transform(%w1, src_layout="OIHW", dst_layout="OIHW16i16o");
      %2 = nn.contrib_conv2d_NCHWc(%0, %1, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                                   out_layout="NCHW16c");
      %3 = nn.relu(%2);
      %4 = layout_transform(%w2, src_layout="OIHW", dst_layout="OIHW8i8o");
      %5 = nn.contrib_conv2d_NCHWc(%3, %4, padding=[1, 1, 1, 1], groups=4,
                                   data_layout="NCHW16c", kernel_layout="OIHW8i8o",
                                   out_layout="NCHW8c");
      %6 = nn.relu(%5);
      %7 = layout_transform(%w3, src_layout="OIHW", dst_layout="OIHW8i16o");
      %8 = nn.contrib_conv2d_NCHWc(%6, %7, data_layout="NCHW8c", kernel_layout="OIHW8i16o",
                                   out_layout="NCHW16c");
      layout_transform(%8, src_layout="NCHW16c", dst_layout="NCHW")
    """
    after = AlterOpLayout(AVX512)(main_module(GROUPED_PARAMS, GROUPED_BEFORE))
    assert_structural_equal(after, main_module(GROUPED_PARAMS, expected))


def test_a_grouped_conv_over_padded_channels_keeps_its_results():
    """24 channels padded to 32 by the first conv: the grouped conv (groups of 8) takes the
    added channels as a fourth group with zero filters, and the last conv gives them zero
    weights; compiled, the model gives the evaluator's results on the NCHW graph."""
    params = (
        "%x: Tensor[(1, 16, 7, 7), float32], %w1: Tensor[(24, 16, 1, 1), float32], "
        "%w2: Tensor[(24, 8, 3, 3), float32], %b2: Tensor[(24), float32], "
        "%w3: Tensor[(16, 24, 1, 1), float32]"
    )
    body = """
      %0 = nn.conv2d(%x, %w1);
      %1 = nn.relu(%0);
      %2 = nn.conv2d(%1, %w2, strides=[2, 2], padding=[1, 1, 1, 1], groups=3);
      %3 = nn.bias_add(%2, %b2);
      %4 = nn.relu(%3);
      nn.conv2d(%4, %w3)
    """
    mod = main_module(params, body)
    text = str(AlterOpLayout(AVX512)(mod))
    assert "groups=4" in text and 'out_layout="NCHW8c"' in text
    # the input in, the result out: nothing between the convs
    assert text.count('src_layout="NCHW",') == text.count('dst_layout="NCHW")') == 1
    rng = np.random.default_rng(4)
    weights = {
        p.name_hint: rng.standard_normal([int(d) for d in p.checked_type.shape], np.float32)
        for p in mod["main"].params[1:]
    }
    x = rng.standard_normal((1, 16, 7, 7), dtype=np.float32)
    compiled = graph.compile(mod, params=weights)
    kernels = [gv.name_hint for gv in compiled.lowered.functions if gv.name_hint != "main"]
    assert sum("contrib_conv2d_NCHWc" in name for name in kernels) == 3
    np.testing.assert_allclose(compiled(x), evaluate(mod, x, params=weights), rtol=1e-4, atol=1e-4)


def test_a_scale_times_a_map_takes_the_map_s_blocks():
    """torchvision's SE writes `scale * x`: the (N, C, 1, 1) scale in blocks of 16 is
    transformed to the grouped conv's blocks of 8, not the map to the scale's."""
    params = GROUPED_PARAMS + ", %w4: Tensor[(32, 32, 1, 1), float32]"
    body = """
      %0 = nn.conv2d(%x, %w1);
      %1 = nn.conv2d(%0, %w2, padding=[1, 1, 1, 1], groups=4);
      %2 = mean(%1, axis=[2, 3], keepdims=True);
      %3 = sigmoid(nn.conv2d(%2, %w4));
      %4 = multiply(%3, %1);
      nn.conv2d(%4, %w3)
    """
    after = InferType()(AlterOpLayout(AVX512)(main_module(params, body)))
    calls = [e for e in post_order_exprs(after["main"]) if isinstance(e, Call)]
    (product,) = [c for c in calls if c.op.name == "multiply"]
    assert tuple(product.checked_type.shape) == (1, 4, 8, 8, 8)
    between = [
        c.args[0].checked_type.shape
        for c in calls
        if c.op.name == "layout_transform" and c.attrs["src_layout"] == "NCHW16c"
        and c.attrs["dst_layout"] == "NCHW8c"
    ]  # fmt: skip
    assert [tuple(shape) for shape in between] == [(1, 2, 1, 1, 16)]
