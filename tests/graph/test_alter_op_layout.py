"""AlterOpLayout: NCHW convolutions become channel-blocked ones with the blocked layout carried
through bias_add, elementwise operators and residual adds (Before/Expected in the text format),
transform pairs cancel, ineligible convolutions stay, and compiled models keep their results."""

from dataclasses import replace

import numpy as np
import pytest
from alter_op_layout_testing import AVX512, main_module
from hypothesis import given, settings
from hypothesis import strategies as st

import tessel.graph as graph
from tessel.graph import Call, InferType, evaluate
from tessel.graph.executor import bind_params
from tessel.graph.passes import AlterOpLayout, FoldConstant
from tessel.graph.passes.alter_op_layout import channel_block
from tessel.graph.traversal import post_order_exprs
from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.schedule.rules.default import host_target

AVX2 = Target(kind="c", vector_bytes=32, vector_registers=16)
# This machine, compiled with AVX-512's blocks whatever its vectors (gcc splits wider vectors).
AVX512_HOST = replace(host_target(), vector_bytes=64, vector_registers=32, fp_contract=True)


PARAMS = (
    "%x: Tensor[(1, 16, 8, 8), float32], %w1: Tensor[(32, 16, 1, 1), float32], "
    "%b1: Tensor[(32), float32], %w2: Tensor[(32, 1, 3, 3), float32]"
)

BEFORE = """
  %0 = nn.conv2d(%x, %w1, channels=32, kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, %b1);
  %2 = clip(%1, a_min=0f, a_max=6f);
  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], groups=32, channels=32, kernel_size=[3, 3]);
  %4 = add(%3, %2);
  nn.global_avg_pool2d(%4)
"""

EXPECTED = """
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = layout_transform(%w1, src_layout="OIHW", dst_layout="OIHW16i16o");
  %2 = nn.contrib_conv2d_NCHWc(%0, %1, channels=32, kernel_size=[1, 1], data_layout="NCHW16c",
                               kernel_layout="OIHW16i16o", out_layout="NCHW16c");
  %3 = reshape(%b1, newshape=[2, 1, 1, 16]);
  %4 = add(%2, %3);
  %5 = clip(%4, a_min=0f, a_max=6f);
  %6 = layout_transform(%w2, src_layout="OIHW", dst_layout="OIHW1i16o");
  %7 = nn.contrib_depthwise_conv2d_NCHWc(%5, %6, padding=[1, 1, 1, 1], groups=32, channels=32,
                                         kernel_size=[3, 3], data_layout="NCHW16c",
                                         kernel_layout="OIHW1i16o", out_layout="NCHW16c");
  %8 = add(%7, %5);
  %9 = nn.global_avg_pool2d(%8, layout="NCHW16c");
  layout_transform(%9, src_layout="NCHW16c", dst_layout="NCHW")
"""


def test_blocked_layout_flows_from_conv_to_conv():
    after = AlterOpLayout(AVX512)(main_module(PARAMS, BEFORE))
    assert_structural_equal(after, main_module(PARAMS, EXPECTED))


def test_blocks_follow_the_target_lanes():
    """With 8 float32 lanes (AVX2) the blocks are 8: NCHW8c, OIHW8i8o."""
    text = str(AlterOpLayout(AVX2)(main_module(PARAMS, BEFORE)))
    assert 'dst_layout="NCHW8c"' in text and 'kernel_layout="OIHW8i8o"' in text
    assert "NCHW16c" not in text


@pytest.mark.parametrize(
    ("channels", "lanes", "block"),
    [
        (32, 16, 16),
        (24, 16, 8),
        (144, 16, 16),
        (3, 16, 1),
        (12, 8, 4),
        (1280, 8, 8),
    ],
)
def test_channel_block_is_the_largest_power_of_two_dividing(channels, lanes, block):
    assert channel_block(channels, lanes) == block


@pytest.mark.parametrize(
    "conv",
    [
        # too few output channels a vector (6: a block of 2)
        (
            "%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(6, 16, 3, 3), float32]",
            "nn.conv2d(%x, %w, padding=[1, 1, 1, 1])",
        ),
        # grouped with two outputs a group (a block of 2)
        (
            "%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(16, 2, 3, 3), float32]",
            "nn.conv2d(%x, %w, groups=8)",
        ),
        # groups of 6 channels over blocks of 4 (12 channels): they do not nest
        (
            "%x: Tensor[(1, 12, 8, 8), float32], %w: Tensor[(16, 6, 3, 3), float32]",
            "nn.conv2d(%x, %w, groups=2)",
        ),
        # NHWC
        (
            "%x: Tensor[(1, 8, 8, 16), float32], %w: Tensor[(3, 3, 16, 16), float32]",
            'nn.conv2d(%x, %w, data_layout="NHWC", kernel_layout="HWIO")',
        ),
        # a depthwise multiplier of 2
        (
            "%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(32, 1, 3, 3), float32]",
            "nn.conv2d(%x, %w, groups=16)",
        ),
    ],
)
def test_ineligible_convolutions_stay(conv):
    mod = main_module(*conv)
    assert AlterOpLayout(AVX512)(mod) is mod


def test_a_tensor_read_in_both_layouts_is_transformed_back_once():
    """The conv's result feeds a blocked conv and a softmax (NCHW): one transform back."""
    params = (
        "%x: Tensor[(1, 16, 4, 4), float32], %w1: Tensor[(16, 16, 1, 1), float32], "
        "%w2: Tensor[(16, 16, 1, 1), float32]"
    )
    body = """
      %0 = nn.conv2d(%x, %w1);
      %1 = nn.softmax(%0, axis=1);
      %2 = nn.softmax(%0, axis=2);
      %3 = nn.conv2d(%0, %w2);
      (%1, %2, %3)
    """
    after = AlterOpLayout(AVX512)(main_module(params, body))
    text = str(after)
    assert text.count('src_layout="NCHW16c", dst_layout="NCHW"') == 2  # %0's once, %3's once
    assert text.count("nn.contrib_conv2d_NCHWc") == 2


def test_weights_fold_into_packed_constants():
    """With weights bound, FoldConstant leaves no layout_transform of a weight."""
    mod = bind_params(main_module(PARAMS, BEFORE), _weights())
    folded = FoldConstant()(AlterOpLayout(AVX512)(mod))
    text = str(folded)
    assert text.count("layout_transform") == 2  # the input in, the pooled result out
    assert "reshape" not in text


def _weights():
    rng = np.random.default_rng(1)
    return {
        "w1": rng.standard_normal((32, 16, 1, 1), dtype=np.float32),
        "b1": rng.standard_normal(32, dtype=np.float32),
        "w2": rng.standard_normal((32, 1, 3, 3), dtype=np.float32),
    }


def test_compiled_model_keeps_its_results():
    mod = main_module(PARAMS, BEFORE)
    x = np.random.default_rng(0).standard_normal((1, 16, 8, 8), dtype=np.float32)
    compiled = graph.compile(mod, params=_weights())
    kernels = [gv.name_hint for gv in compiled.lowered.functions if gv.name_hint != "main"]
    assert any("NCHWc" in name for name in kernels)
    np.testing.assert_allclose(
        compiled(x), evaluate(mod, x, params=_weights()), rtol=1e-4, atol=1e-4
    )


def test_blocked_weights_keep_their_parameters_names(tmp_path):
    """Weights that AlterOpLayout blocks are Constants FoldConstant computed; the compiled
    model names each after the parameter it came from, in the library and in an export."""
    from safetensors.numpy import load_file

    compiled = graph.compile(main_module(PARAMS, BEFORE), params=_weights())
    names = [p.name for p in compiled.aot.of_kind("weight")]
    assert names == ["w1_folded", "b1_folded", "w2_folded"]
    exported = load_file(str(compiled.export(tmp_path) / "params.safetensors"))
    assert sorted(exported) == sorted(names)
    assert exported["w1_folded"].ndim == 6  # OIHW[x]i[y]o, blocked by the host's lanes


@st.composite
def _cnns(draw):
    """A random small CNN in Relay text: convolutions (1x1, 3x3, strided, depthwise, grouped) with
    optional bias and relu/clip, residual adds where shapes allow, max pooling,
    squeeze-and-excitation blocks (a spatial mean, a 1x1 conv, a hard sigmoid, the scale
    multiplied over the map), and a global average pool or the map itself at the end; channel
    counts blocked by 16, 8, 4 or not at all. Returns (params text, body text, weights)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    channels, size = draw(st.sampled_from([3, 8, 16])), draw(st.sampled_from([6, 7, 9]))
    params, lines, weights = [f"%x: Tensor[(1, {channels}, {size}, {size}), float32]"], [], {}
    current, history = "%x", {}

    def bind(expr: str) -> str:
        lines.append(f"%{len(lines)} = {expr};")
        return f"%{len(lines) - 1}"

    for index in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["1x1", "3x3", "s2", "depthwise", "grouped", "pool", "se"]))
        if kind == "pool" and size >= 4:
            current = bind(
                f"nn.max_pool2d({current}, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])"
            )
            size = (size + 1) // 2
            continue
        if kind == "se":  # squeeze-and-excitation, its gate a hard sigmoid of scalar ops
            params.append(f"%w{index}: Tensor[({channels}, {channels}, 1, 1), float32]")
            weights[f"w{index}"] = rng.standard_normal((channels, channels, 1, 1), np.float32)
            squeeze = bind(f"mean({current}, axis=[2, 3], keepdims=True)")
            excite = bind(f"nn.conv2d({squeeze}, %w{index})")
            gate = bind(f"clip(add(multiply({excite}, 0.2f), 0.5f), a_min=0f, a_max=1f)")
            current = bind(f"multiply({current}, {gate})")
            continue
        if kind == "grouped" and channels % 2:
            kind = "3x3"
        out = channels if kind == "depthwise" else draw(st.sampled_from([4, 6, 8, 16, 24, 32]))
        k, stride = (1, 1) if kind == "1x1" else (3, 2 if kind == "s2" else 1)
        groups = channels if kind == "depthwise" else 1
        if kind == "grouped":  # groups of 2, 4 or 8 channels, as many outputs a group
            groups = channels // draw(st.sampled_from([d for d in (2, 4, 8) if channels % d == 0]))
            out = channels
        shape = (out, channels // groups, k, k)
        params.append(f"%w{index}: Tensor[{shape}, float32]")
        weights[f"w{index}"] = rng.standard_normal(shape, dtype=np.float32) * 0.3
        pad = k // 2
        current = bind(
            f"nn.conv2d({current}, %w{index}, strides=[{stride}, {stride}], "
            f"padding=[{pad}, {pad}, {pad}, {pad}], groups={groups})"
        )
        channels, size = out, (size + 2 * (k // 2) - k) // stride + 1
        if draw(st.booleans()):
            params.append(f"%b{index}: Tensor[({out}), float32]")
            weights[f"b{index}"] = rng.standard_normal(out, dtype=np.float32)
            current = bind(f"nn.bias_add({current}, %b{index})")
        activation = draw(st.sampled_from(["", "nn.relu", "clip"]))
        if activation:
            extra = ", a_min=0f, a_max=6f" if activation == "clip" else ""
            current = bind(f"{activation}({current}{extra})")
        earlier = history.get((channels, size))
        if earlier is not None and draw(st.booleans()):
            current = bind(f"add({current}, {earlier})")
        history[(channels, size)] = current
    tail = f"nn.global_avg_pool2d({current})" if draw(st.booleans()) else current
    return ", ".join(params), "\n".join([*lines, tail]), weights


@settings(max_examples=12, deadline=None)
@given(_cnns())
def test_random_cnns_keep_their_results(cnn):
    """Compiled with AlterOpLayout (this machine's blocks), any such CNN gives the evaluator's
    results on the NCHW graph it came from."""
    params, body, weights = cnn
    mod = main_module(params, body)
    shape = mod["main"].params[0].checked_type.shape
    x = np.random.default_rng(3).standard_normal(shape, dtype=np.float32)
    compiled = graph.compile(mod, params=weights)
    np.testing.assert_allclose(compiled(x), evaluate(mod, x, params=weights), rtol=1e-4, atol=1e-4)


PADDED_PARAMS = (
    "%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(24, 16, 1, 1), float32], "
    "%w2: Tensor[(16, 24, 3, 3), float32]"
)


def _padded_weights():
    rng = np.random.default_rng(2)
    return {
        "w1": rng.standard_normal((24, 16, 1, 1), dtype=np.float32) * 0.2,
        "w2": rng.standard_normal((16, 24, 3, 3), dtype=np.float32) * 0.2,
    }


@pytest.mark.parametrize("activation", ["nn.relu", "exp"])
def test_24_channels_are_padded_to_32_and_sliced_off_for_nchw_readers(activation):
    """24 output channels fill two blocks of 16 with 8 zero filters (onnxruntime's padding);
    the next conv gets zero weights for them; an NCHW reader gets the 24 sliced out; exp (not
    known to keep the added channels finite) reads the sliced NCHW tensor. Results kept."""
    body = f"""
      %0 = nn.conv2d(%x, %w1);
      %1 = {activation}(%0);
      %2 = nn.conv2d(%1, %w2, padding=[1, 1, 1, 1]);
      (%2, nn.softmax(%1, axis=1))
    """
    mod = main_module(PADDED_PARAMS, body)
    text = str(AlterOpLayout(AVX512)(mod))
    assert "strided_slice" in text  # the NCHW readers see 24 channels
    if activation == "nn.relu":
        assert text.count("nn.pad(") == 2  # w1's filters, w2's input channels
        assert 'kernel_layout="OIHW16i16o"' in text and "NCHW8c" not in text
    else:  # exp of the sliced NCHW tensor, then 24 channels blocked by 8 for the next conv
        assert text.count("nn.pad(") == 1 and 'dst_layout="NCHW8c"' in text
    x = np.random.default_rng(0).standard_normal((1, 16, 6, 6), dtype=np.float32)
    compiled = graph.compile(mod, params=_padded_weights(), target=AVX512_HOST)
    for got, want in zip(compiled(x), evaluate(mod, x, params=_padded_weights()), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


CONCAT_PARAMS = (
    "%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(32, 16, 1, 1), float32], "
    "%w2: Tensor[(16, 16, 3, 3), float32], %w3: Tensor[(16, 48, 1, 1), float32]"
)
CONCAT_BEFORE = """
  %0 = nn.relu(nn.conv2d(%x, %w1));
  %1 = nn.relu(nn.conv2d(%x, %w2, padding=[1, 1, 1, 1]));
  %2 = concatenate((%0, %1), axis=1);
  nn.conv2d(%2, %w3)
"""
CONCAT_EXPECTED = """
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = layout_transform(%w1, src_layout="OIHW", dst_layout="OIHW16i16o");
  %2 = nn.contrib_conv2d_NCHWc(%0, %1, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                               out_layout="NCHW16c");
  %3 = layout_transform(%w2, src_layout="OIHW", dst_layout="OIHW16i16o");
  %4 = nn.contrib_conv2d_NCHWc(%0, %3, padding=[1, 1, 1, 1], data_layout="NCHW16c",
                               kernel_layout="OIHW16i16o", out_layout="NCHW16c");
  %5 = concatenate((nn.relu(%2), nn.relu(%4)), axis=1);
  %6 = layout_transform(%w3, src_layout="OIHW", dst_layout="OIHW16i16o");
  %7 = nn.contrib_conv2d_NCHWc(%5, %6, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                               out_layout="NCHW16c");
  layout_transform(%7, src_layout="NCHW16c", dst_layout="NCHW")
"""


def test_branches_concatenated_along_channels_stay_blocked():
    after = AlterOpLayout(AVX512)(main_module(CONCAT_PARAMS, CONCAT_BEFORE))
    assert_structural_equal(after, main_module(CONCAT_PARAMS, CONCAT_EXPECTED))
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal(p.checked_type.shape).astype("float32") for p in after["main"].params
    ]
    before = main_module(CONCAT_PARAMS, CONCAT_BEFORE)
    np.testing.assert_allclose(
        evaluate(after, *inputs), evaluate(before, *inputs), rtol=1e-4, atol=1e-5
    )


def test_a_concatenation_with_a_padded_or_indivisible_input_stays_in_nchw():
    params = (
        "%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(24, 16, 1, 1), float32], "
        "%y: Tensor[(1, 4, 6, 6), float32]"
    )
    # 24 filters are padded to 32: the added channels would sit between the inputs'
    padded = AlterOpLayout(AVX512)(
        main_module(params, "concatenate((nn.conv2d(%x, %w1), %y), axis=1)")
    )
    assert "concatenate((layout_transform" not in str(padded)
    assert str(padded).count("strided_slice") == 1


def test_a_concatenation_of_shared_inputs_is_blocked_only_for_blocked_readers():
    """Feature maps joined by two concatenations: the join a conv reads is made in the blocked
    layout; the join returned in NCHW stays in NCHW (reading the shared transforms back,
    one each, rather than transforming the whole join back)."""
    body = """
      %0 = nn.relu(nn.conv2d(%x, %w1));
      %1 = nn.relu(nn.conv2d(%x, %w2, padding=[1, 1, 1, 1]));
      %2 = concatenate((%0, %1), axis=1);
      %3 = concatenate((%0, %1, %1), axis=1);
      (nn.conv2d(%2, %w3), %3)
    """
    before = main_module(CONCAT_PARAMS, body)
    after = InferType()(AlterOpLayout(AVX512)(before))
    calls = [n for n in post_order_exprs(after["main"]) if isinstance(n, Call)]
    joins = [c for c in calls if getattr(c.op, "name", "") == "concatenate"]
    assert [j.checked_type.shape for j in joins] == [(1, 3, 6, 6, 16), (1, 64, 6, 6)]
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(p.checked_type.shape, np.float32) for p in before["main"].params]
    for got, want in zip(evaluate(after, *inputs), evaluate(before, *inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


DENSE_PARAMS = (
    "%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(16, 16, 3, 3), float32], "
    "%w2: Tensor[(16, 32, 3, 3), float32], %w3: Tensor[(8, 48, 1, 1), float32], "
    "%g1: Tensor[(32), float32], %b1: Tensor[(32), float32], %m1: Tensor[(32), float32], "
    "%v1: Tensor[(32), float32], %g2: Tensor[(48), float32], %b2: Tensor[(48), float32], "
    "%m2: Tensor[(48), float32], %v2: Tensor[(48), float32]"
)
# Two DenseNet layers: each joins every earlier feature map, then batch norm, relu and a conv.
DENSE_BEFORE = """
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]));
  %1 = concatenate((%x, %0), axis=1);
  %2 = nn.batch_norm(%1, %g1, %b1, %m1, %v1, epsilon=1e-5f);
  %3 = nn.conv2d(nn.relu(%2.0), %w2, padding=[1, 1, 1, 1]);
  %4 = concatenate((%x, %0, %3), axis=1);
  %5 = nn.batch_norm(%4, %g2, %b2, %m2, %v2, epsilon=1e-5f);
  nn.conv2d(nn.relu(%5.0), %w3)
"""


def _dense_inputs(mod):
    rng = np.random.default_rng(6)
    inputs = []
    for param in mod["main"].params:
        value = rng.standard_normal(param.checked_type.shape, np.float32)
        inputs.append(np.abs(value) + 0.5 if param.name_hint.startswith("v") else value)
    return inputs


def test_densenet_joins_and_batch_norms_stay_blocked():
    """The joins of shared feature maps read by batch norms are blocked, and each batch norm
    is the blocked tensor times a per-channel scale plus a shift: the only transforms are
    the input's and the result's (and the weights'). Evaluated and compiled, the results
    are kept."""
    before = main_module(DENSE_PARAMS, DENSE_BEFORE)
    after = InferType()(AlterOpLayout(AVX512)(before))
    calls = [n for n in post_order_exprs(after["main"]) if isinstance(n, Call)]
    names = [c.op.name for c in calls]
    assert "nn.batch_norm" not in names
    joins = [c for c in calls if c.op.name == "concatenate"]
    assert [j.checked_type.shape for j in joins] == [(1, 2, 6, 6, 16), (1, 3, 6, 6, 16)]
    data_transforms = [
        c for c in calls if c.op.name == "layout_transform" and c.attrs["src_layout"] != "OIHW"
    ]
    assert len(data_transforms) == 2  # %x in, the result out
    inputs = _dense_inputs(before)
    want = evaluate(before, *inputs)
    np.testing.assert_allclose(evaluate(after, *inputs), want, rtol=1e-4, atol=1e-4)
    names = [p.name_hint for p in before["main"].params][1:]
    weights = dict(zip(names, inputs[1:], strict=True))
    compiled = graph.compile(before, params=weights, target=AVX512_HOST)
    np.testing.assert_allclose(compiled(inputs[0]), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("center", "scale", "channels"), [(True, False, 32), (False, True, 32), (True, True, 24)]
)
def test_a_blocked_batch_norm_keeps_its_results(center, scale, channels):
    """Without beta, without gamma, and over 24 channels padded to 32 (the added channels
    scaled and shifted by zero)."""
    params = (
        f"%x: Tensor[(1, 16, 5, 5), float32], %w: Tensor[({channels}, 16, 1, 1), float32], "
        f"%g: Tensor[({channels}), float32], %b: Tensor[({channels}), float32], "
        f"%m: Tensor[({channels}), float32], %v: Tensor[({channels}), float32]"
    )
    flags = f"center={center}, scale={scale}"
    body = f"""
      %0 = nn.conv2d(%x, %w);
      %1 = nn.batch_norm(%0, %g, %b, %m, %v, epsilon=0.001f, {flags});
      nn.relu(%1.0)
    """
    before = main_module(params, body)
    after = AlterOpLayout(AVX512)(before)
    assert "nn.batch_norm" not in str(after)
    inputs = _dense_inputs(before)
    np.testing.assert_allclose(
        evaluate(after, *inputs), evaluate(before, *inputs), rtol=1e-4, atol=1e-5
    )


SE_PARAMS = (
    "%x: Tensor[(1, 16, 6, 6), float32], %w1: Tensor[(32, 16, 1, 1), float32], "
    "%w2: Tensor[(8, 32, 1, 1), float32], %w3: Tensor[(32, 8, 1, 1), float32]"
)
# timm's squeeze-and-excitation: the squeeze a mean over H and W keeping them, a hard sigmoid
# (x * a + b, clipped) of the excitation, and the scale multiplied in over the map.
SE_BEFORE = """
  %0 = nn.relu(nn.conv2d(%x, %w1));
  %1 = mean(%0, axis=[2, 3], keepdims=True);
  %2 = nn.relu(nn.conv2d(%1, %w2));
  %3 = nn.conv2d(%2, %w3);
  %4 = clip(add(multiply(%3, 0.166667f), 0.5f), a_min=0f, a_max=1f);
  multiply(%0, %4)
"""
SE_EXPECTED = """
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = layout_transform(%w1, src_layout="OIHW", dst_layout="OIHW16i16o");
  %2 = nn.contrib_conv2d_NCHWc(%0, %1, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                               out_layout="NCHW16c");
  %3 = nn.relu(%2);
  %4 = mean(%3, axis=[2, 3], keepdims=True);
  %5 = layout_transform(%w2, src_layout="OIHW", dst_layout="OIHW16i8o");
  %6 = nn.contrib_conv2d_NCHWc(%4, %5, data_layout="NCHW16c", kernel_layout="OIHW16i8o",
                               out_layout="NCHW8c");
  %7 = nn.relu(%6);
  %8 = layout_transform(%w3, src_layout="OIHW", dst_layout="OIHW8i16o");
  %9 = nn.contrib_conv2d_NCHWc(%7, %8, data_layout="NCHW8c", kernel_layout="OIHW8i16o",
                               out_layout="NCHW16c");
  %10 = clip(add(multiply(%9, 0.166667f), 0.5f), a_min=0f, a_max=1f);
  %11 = multiply(%3, %10);
  layout_transform(%11, src_layout="NCHW16c", dst_layout="NCHW")
"""


def _se_weights():
    rng = np.random.default_rng(4)
    return {
        "w1": rng.standard_normal((32, 16, 1, 1), dtype=np.float32) * 0.3,
        "w2": rng.standard_normal((8, 32, 1, 1), dtype=np.float32) * 0.3,
        "w3": rng.standard_normal((32, 8, 1, 1), dtype=np.float32) * 0.3,
    }


def test_a_squeeze_and_excitation_block_stays_blocked():
    """The squeeze (a spatial mean keeping its dimensions), the excitation's convs, the hard
    sigmoid's scalar multiply and add, and the scale broadcast over the map all work on the
    blocked tensors: one transform in, one out. The compiled model keeps the results."""
    before = main_module(SE_PARAMS, SE_BEFORE)
    after = AlterOpLayout(AVX512)(before)
    assert_structural_equal(after, main_module(SE_PARAMS, SE_EXPECTED))
    x = np.random.default_rng(0).standard_normal((1, 16, 6, 6), dtype=np.float32)
    compiled = graph.compile(before, params=_se_weights(), target=AVX512_HOST)
    np.testing.assert_allclose(
        compiled(x), evaluate(before, x, params=_se_weights()), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    "squeeze",
    [
        "sum(%0, axis=[-1, -2], keepdims=True)",
        "max(%0, axis=[0, 1], exclude=True, keepdims=True)",
        "min(%0, axis=[2, 3], keepdims=True)",
    ],
)
def test_spatial_reductions_keeping_dimensions_stay_blocked_over_padded_channels(squeeze):
    """24 channels padded to 32: a sum, max or min over H and W (axes written any way) of the
    padded tensor, broadcast back over it, keeps the results; the slice comes at the end."""
    params = "%x: Tensor[(1, 16, 5, 5), float32], %w1: Tensor[(24, 16, 1, 1), float32]"
    body = f"""
      %0 = nn.relu(nn.conv2d(%x, %w1));
      %1 = {squeeze};
      subtract(%0, %1)
    """
    before = main_module(params, body)
    text = str(AlterOpLayout(AVX512)(before))
    assert text.count("layout_transform(") == 3  # %x in, %w1, the result out
    weights = {"w1": np.random.default_rng(1).standard_normal((24, 16, 1, 1), dtype=np.float32)}
    x = np.random.default_rng(0).standard_normal((1, 16, 5, 5), dtype=np.float32)
    compiled = graph.compile(before, params=weights, target=AVX512_HOST)
    np.testing.assert_allclose(
        compiled(x), evaluate(before, x, params=weights), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(
    "reduction",
    [
        "mean(%0, axis=[2, 3])",  # dimensions dropped: (1, 32)
        "mean(%0, axis=[1], keepdims=True)",  # over the channels
        "mean(%0, axis=[3], keepdims=True)",  # one spatial axis
    ],
)
def test_other_reductions_read_the_nchw_tensor(reduction):
    params = "%x: Tensor[(1, 16, 5, 5), float32], %w1: Tensor[(32, 16, 1, 1), float32]"
    before = main_module(params, f"%0 = nn.conv2d(%x, %w1);\n{reduction}")
    after = AlterOpLayout(AVX512)(before)
    call = after["main"].body
    assert call.op.name == "mean"
    assert call.args[0].op.name == "layout_transform"  # the NCHW tensor
    x = np.random.default_rng(0).standard_normal((1, 16, 5, 5), dtype=np.float32)
    w1 = np.random.default_rng(1).standard_normal((32, 16, 1, 1), dtype=np.float32)
    np.testing.assert_allclose(
        evaluate(after, x, w1), evaluate(before, x, w1), rtol=1e-5, atol=1e-5
    )
