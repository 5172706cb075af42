"""The one conv2d compute behind topi.nn.conv2d_nchw, group_conv2d_nchw, depthwise_conv2d_nchw and
conv2d_nhwc: groups 1, 2 and the input channels (depthwise) against a NumPy reference, in the
interpreter and as C, unscheduled and with the default schedule (whose conv rule must still
recognise each entry point's block); and each entry point keeps TVM's loop names."""

import numpy as np
import pytest

import tessel
from tessel import te
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.conv import Conv, match_conv
from tessel.testing.topi import check_operator
from tessel.topi.nn.conv2d import (
    conv2d_nchw,
    conv2d_nhwc,
    depthwise_conv2d_nchw,
    group_conv2d_nchw,
)
from tessel.topi.utils import OperatorError


def numpy_conv2d(x, w, stride, pad, dilation, groups):
    """NCHW / OIHW grouped convolution by its definition: out[n, f, y, x] sums, over the input
    channels c of f's group and the taps (r, s), in[n, c, y * S + r * D, x * S + s * D] *
    w[f, c - group start, r, s] on the zero-padded input."""
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
    batch, channels, height, width = padded.shape
    filters, per_group, kh, kw = w.shape
    oh = (height - (kh - 1) * dilation - 1) // stride + 1
    ow = (width - (kw - 1) * dilation - 1) // stride + 1
    out = np.zeros((batch, filters, oh, ow))
    for f in range(filters):
        first = f // (filters // groups) * per_group
        for r in range(kh):
            for s in range(kw):
                rows = slice(r * dilation, r * dilation + (oh - 1) * stride + 1, stride)
                cols = slice(s * dilation, s * dilation + (ow - 1) * stride + 1, stride)
                window = padded[:, first : first + per_group, rows, cols]
                out[:, f] += np.einsum("nchw,c->nhw", window, w[f, :, r, s])
    return out.astype(x.dtype)


CASES = [
    # (channels, filters, size, kernel, stride, pad, dilation, groups)
    (4, 6, 7, 3, 1, 1, 1, 1),
    (4, 6, 8, 3, 2, 1, 1, 2),
    (6, 6, 7, 3, 1, 1, 2, 6),  # depthwise
    (3, 6, 9, 3, 2, 0, 1, 3),  # depthwise, channel multiplier 2
]


def _compiled_with_default_schedule(inputs, out, values):
    """`out` scheduled by the default rules and compiled to C, run on `values`."""
    scheduled = default_schedule(te.create_prim_func([*inputs, out])).func
    result = np.zeros(out.const_shape(), out.dtype)
    tessel.build(scheduled)(*values, result)
    return scheduled, result


@pytest.mark.parametrize(("c", "k", "size", "kernel", "s", "p", "d", "groups"), CASES)
def test_group_conv2d_matches_numpy_for_groups_1_2_and_depthwise(
    c, k, size, kernel, s, p, d, groups
):
    data = te.placeholder((1, c, size, size), name="data")
    weight = te.placeholder((k, c // groups, kernel, kernel), name="weight")
    out = group_conv2d_nchw(data, weight, s, p, d, groups)
    values = check_operator([data, weight], out, lambda x, w: numpy_conv2d(x, w, s, p, d, groups))
    _, got = _compiled_with_default_schedule([data, weight], out, values)
    np.testing.assert_allclose(got, numpy_conv2d(*values, s, p, d, groups), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("c", "k", "size", "kernel", "s", "p", "d", "groups"), [case for case in CASES if case[-1] == 1]
)
def test_conv2d_nchw_is_the_grouped_conv_with_one_group(c, k, size, kernel, s, p, d, groups):
    data = te.placeholder((1, c, size, size), name="data")
    weight = te.placeholder((k, c, kernel, kernel), name="weight")
    out = conv2d_nchw(data, weight, s, p, d)
    values = check_operator([data, weight], out, lambda x, w: numpy_conv2d(x, w, s, p, d, 1))
    _, got = _compiled_with_default_schedule([data, weight], out, values)
    np.testing.assert_allclose(got, numpy_conv2d(*values, s, p, d, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("c", "multiplier", "size", "s", "p", "d"),
    [(6, 1, 7, 1, 1, 2), (3, 2, 9, 2, 0, 1), (4, 1, 16, 1, 1, 1)],
)
def test_depthwise_conv2d_nchw_is_the_grouped_conv_with_groups_equal_to_channels(
    c, multiplier, size, s, p, d
):
    data = te.placeholder((1, c, size, size), name="data")
    weight = te.placeholder((c, multiplier, 3, 3), name="weight")
    out = depthwise_conv2d_nchw(data, weight, s, p, d)

    def reference(x, w):  # TVM's (C, multiplier) filter is the grouped (C * multiplier, 1) one
        return numpy_conv2d(x, w.reshape(c * multiplier, 1, 3, 3), s, p, d, groups=c)

    values = check_operator([data, weight], out, reference)
    _, got = _compiled_with_default_schedule([data, weight], out, values)
    np.testing.assert_allclose(got, reference(*values), rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc_matches_numpy_through_the_same_compute():
    data = te.placeholder((1, 7, 6, 4), name="data")
    weight = te.placeholder((3, 3, 4, 5), name="weight")
    out = conv2d_nhwc(data, weight, 2, 1, 1)

    def reference(x, w):
        nchw = numpy_conv2d(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), 2, 1, 1, 1)
        return nchw.transpose(0, 2, 3, 1)

    check_operator([data, weight], out, reference)


def _loops_and_match(data, weight, out):
    """The loop variables of the conv block, in order, and what the conv rule sees in it."""
    func = te.create_prim_func([data, weight, out])
    sch = Schedule(func)
    block = sch.get_block(out.op.name)
    loops = [sch.loop(loop).loop_var.name for loop in sch.get_loops(block)]
    return loops, match_conv(sch.block(block).block)


def test_each_entry_point_keeps_tvm_names_and_the_conv_rule_recognises_it():
    data = te.placeholder((1, 4, 6, 6), name="data")
    weight = te.placeholder((8, 4, 3, 3))
    names, conv = _loops_and_match(data, weight, conv2d_nchw(data, weight, 1, 1, 1))
    assert names == ["nn", "ff", "yy", "xx", "rc", "ry", "rx"]
    assert conv == Conv(depthwise=False, grouped=False)
    weight = te.placeholder((8, 2, 3, 3))
    grouped = group_conv2d_nchw(data, weight, 1, 1, 1, 2)
    names, conv = _loops_and_match(data, weight, grouped)
    assert grouped.op.name == "group_conv2d_nchw" and conv == Conv(depthwise=False, grouped=True)
    # groups = channels through group_conv2d_nchw keeps its one-channel reduction (the graph's
    # depthwise form), TVM's depthwise filter (C, multiplier, KH, KW) has none.
    weight = te.placeholder((4, 1, 3, 3))
    per_channel = group_conv2d_nchw(data, weight, 1, 1, 1, 4)
    names, conv = _loops_and_match(data, weight, per_channel)
    assert names == ["nn", "ff", "yy", "xx", "rc", "ry", "rx"] and conv is not None
    depthwise = depthwise_conv2d_nchw(data, weight, 1, 1, 1)
    names, conv = _loops_and_match(data, weight, depthwise)
    assert (depthwise.op.name, names) == ("DepthwiseConv2d", ["b", "c", "i", "j", "di", "dj"])
    assert conv == Conv(depthwise=True)
    data, weight = te.placeholder((1, 6, 6, 4)), te.placeholder((3, 3, 4, 8))
    nhwc = conv2d_nhwc(data, weight, 1, 1, 1)
    names, _ = _loops_and_match(data, weight, nhwc)
    assert (nhwc.op.name, names) == ("Conv2dOutput", ["nn", "yy", "xx", "ff", "ry", "rx", "rc"])


def test_a_filter_of_the_wrong_channels_is_named_with_its_layout_axis():
    data = te.placeholder((1, 6, 5, 5))
    with pytest.raises(
        OperatorError,
        match=r"has 2 input channels per group \(axis 1 of OIHW\) "
        r"but `Input` has 6 channels in 2 group\(s\)",
    ):
        group_conv2d_nchw(data, te.placeholder((4, 2, 3, 3)), 1, 1, 1, 2)
    with pytest.raises(
        OperatorError,
        match=r"conv2d_nhwc: argument `Filter`: has 5 input "
        r"channels per group \(axis 2 of HWIO\)",
    ):
        conv2d_nhwc(te.placeholder((1, 5, 5, 6)), te.placeholder((3, 3, 5, 2)), 1, 1, 1)
    with pytest.raises(
        OperatorError,
        match="depthwise_conv2d_nchw: argument `Filter`: has 4 "
        r"channels \(axis 0\)",
    ):
        depthwise_conv2d_nchw(data, te.placeholder((4, 1, 3, 3)), 1, 1, 1)
