"""Data layouts (tessel.topi.layout): parsing and its errors, layout_transform against NumPy's
transform_array in the interpreter and C, the round-trip law (a hypothesis property), and the
channel-blocked convolutions against PyTorch's NCHW ones."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel import te, topi
from tessel.testing.topi import check_operator
from tessel.topi.layout import LayoutError, layout, layout_transform, transform_array
from tessel.topi.transform import reshape
from tessel.topi.utils import OperatorError


def test_layout_parses_primal_and_sub_axes():
    parsed = layout("NCHW16c")
    assert parsed.primal == "NCHW"
    assert parsed.factor("C") == 16 and parsed.factor("H") == 0
    assert parsed.shape((2, 32, 5, 7)) == (2, 2, 5, 7, 16)
    assert parsed.primal_shape((2, 2, 5, 7, 16)) == (2, 32, 5, 7)
    assert layout("OIHW8i16o").shape((32, 16, 3, 3)) == (2, 2, 3, 3, 8, 16)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("NC16HW", "primal axis"),
        ("NCHWc", "positive factor"),
        ("NCHW0c", "positive factor"),
        ("N16cCHW", "must follow its primal axis"),
        ("NCHWC", "appears twice"),
        ("NCHW16c8c", "must follow its primal axis"),
        ("NC-HW", "unexpected"),
        ("", "a layout is a string"),
    ],
)
def test_bad_layouts_name_the_fault(text, match):
    with pytest.raises(LayoutError, match=match):
        layout(text)


def test_a_block_that_does_not_divide_its_axis_is_an_error():
    with pytest.raises(LayoutError, match="block 16 does not divide"):
        layout("NCHW16c").shape((1, 24, 4, 4))
    x = te.placeholder((1, 24, 4, 4), name="x")
    with pytest.raises(LayoutError, match="block 16 does not divide"):
        layout_transform(x, "NCHW", "NCHW16c")


def test_layouts_of_other_axes_are_refused():
    x = te.placeholder((1, 8, 4, 4), name="x")
    with pytest.raises(OperatorError, match="does not have the axes"):
        layout_transform(x, "NCHW", "NHWD")
    with pytest.raises(OperatorError, match="has rank 4"):
        layout_transform(x, "NCHW16c", "NCHW")


@pytest.mark.parametrize(
    ("shape", "src", "dst"),
    [
        ((1, 32, 3, 5), "NCHW", "NCHW16c"),
        ((2, 2, 3, 5, 8), "NCHW8c", "NCHW"),
        ((1, 2, 3, 5, 8), "NCHW8c", "NCHW4c"),
        ((1, 4, 3, 5, 4), "NCHW4c", "NHWC"),
        ((32, 16, 3, 3), "OIHW", "OIHW8i16o"),
    ],
)
def test_layout_transform_matches_numpy(shape, src, dst):
    x = te.placeholder(shape, name="x")
    check_operator([x], layout_transform(x, src, dst), lambda a: transform_array(a, src, dst))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(1, 3),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.sampled_from([1, 2, 4, 8, 16]),
)
def test_transform_there_and_back_is_the_identity(batch, chunks, size, first, second):
    """NCHW -> NCHW[a]c -> NCHW[b]c -> NCHW returns the array, for every block dividing C."""
    channels = chunks * 16
    x = np.random.default_rng(0).standard_normal((batch, channels, size, size + 1))
    a, b = f"NCHW{first}c", f"NCHW{second}c"
    there = transform_array(transform_array(x, "NCHW", a), a, b)
    assert there.shape == (batch, channels // second, size, size + 1, second)
    np.testing.assert_array_equal(transform_array(there, b, "NCHW"), x)


def test_a_reshape_of_unit_axes_indexes_without_division():
    """NCHW -> NCHW1c (what AlterOpLayout makes of 3 input channels) maps axes one to one."""
    x = te.placeholder((1, 3, 5, 7), name="x")
    out = reshape(x, (1, 3, 5, 7, 1))
    script = te.create_prim_func([x, out]).script()
    assert "//" not in script and "%" not in script
    check_operator([x], out, lambda a: a.reshape(1, 3, 5, 7, 1))
    blocked = te.placeholder((1, 3, 5, 7, 1), name="blocked")
    check_operator([blocked], reshape(blocked, (3, 5, 7)), lambda a: a.reshape(3, 5, 7))


@pytest.mark.parametrize(
    ("shape", "k", "stride", "pad", "ic_bn", "oc_bn", "depthwise"),
    [
        ((1, 8, 7, 7), 3, 1, 1, 4, 8, False),
        ((2, 6, 9, 8), 3, 2, 1, 2, 4, False),
        ((1, 8, 6, 6), 3, 1, 1, 8, 8, True),
        ((1, 4, 7, 5), 3, 2, 1, 2, 4, True),  # two filters per channel
    ],
)
def test_blocked_convolutions_match_torch(shape, k, stride, pad, ic_bn, oc_bn, depthwise):
    torch = pytest.importorskip("torch")
    n, c, h, w = shape
    f = 2 * c if depthwise and ic_bn != oc_bn else (c if depthwise else 16)
    data = te.placeholder((n, c // ic_bn, h, w, ic_bn), name="data")
    if depthwise:
        kernel = te.placeholder((f // oc_bn, 1, k, k, 1, oc_bn), name="kernel")
        out = topi.nn.depthwise_conv2d_NCHWc(
            data, kernel, stride, pad, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c"
        )
        kernel_layout = f"OIHW1i{oc_bn}o"
    else:
        kernel = te.placeholder((f // oc_bn, c // ic_bn, k, k, ic_bn, oc_bn), name="kernel")
        out = topi.nn.conv2d_NCHWc(data, kernel, stride, pad, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
        kernel_layout = f"OIHW{ic_bn}i{oc_bn}o"
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape, dtype=np.float32)
    wt = rng.standard_normal((f, 1 if depthwise else c, k, k), dtype=np.float32)
    reference = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None, stride, pad, groups=c if depthwise else 1
    )
    expected = transform_array(reference.numpy(), "NCHW", f"NCHW{oc_bn}c")
    values = [
        transform_array(x, "NCHW", f"NCHW{ic_bn}c"),
        transform_array(wt, "OIHW", kernel_layout),
    ]
    check_operator([data, kernel], out, lambda *_: expected, values=values, rtol=1e-4, atol=1e-4)


def test_blocked_convolutions_check_their_layouts():
    data = te.placeholder((1, 2, 5, 5, 4), name="data")
    kernel = te.placeholder((1, 2, 3, 3, 4, 8), name="kernel")
    with pytest.raises(OperatorError, match="does not block by 4"):
        topi.nn.conv2d_NCHWc(data, kernel, 1, 1, 1, "NCHW8c", "NCHW8c")
    with pytest.raises(OperatorError, match=r"expected NCHW\[x\]c"):
        topi.nn.conv2d_NCHWc(data, kernel, 1, 1, 1, "NHWC4c", "NCHW8c")
    bad = te.placeholder((1, 1, 3, 3, 4, 8), name="bad")
    with pytest.raises(OperatorError, match="input channels"):
        topi.nn.conv2d_NCHWc(data, bad, 1, 1, 1, "NCHW4c", "NCHW8c")


@pytest.mark.parametrize(
    ("shape", "filters", "groups", "stride", "ic_bn", "k_bn", "oc_bn"),
    [
        ((1, 32, 7, 7), 32, 4, 1, 16, 8, 8),  # two groups of 8 a block of 16 (RegNet)
        ((1, 16, 6, 5), 32, 2, 2, 4, 4, 8),  # a group of 8 in two blocks of 4
        ((2, 12, 6, 6), 8, 2, 1, 4, 2, 4),  # groups of 6 across blocks of 4
        ((1, 24, 5, 5), 48, 3, 2, 8, 8, 16),  # one group a block, 16 outputs a group
    ],
)
def test_grouped_blocked_convolutions_match_torch(
    shape, filters, groups, stride, ic_bn, k_bn, oc_bn
):
    """group_conv2d_NCHWc against PyTorch's grouped NCHW convolution, in each way its input
    blocks and its groups can meet."""
    torch = pytest.importorskip("torch")
    n, c, h, w = shape
    per_group = c // groups
    data = te.placeholder((n, c // ic_bn, h, w, ic_bn), name="data")
    kernel = te.placeholder((filters // oc_bn, per_group // k_bn, 3, 3, k_bn, oc_bn), name="kernel")
    out = topi.nn.group_conv2d_NCHWc(
        data, kernel, stride, 1, 1, groups, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c"
    )
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape, dtype=np.float32)
    wt = rng.standard_normal((filters, per_group, 3, 3), dtype=np.float32)
    reference = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None, stride, 1, groups=groups
    )
    expected = transform_array(reference.numpy(), "NCHW", f"NCHW{oc_bn}c")
    values = [
        transform_array(x, "NCHW", f"NCHW{ic_bn}c"),
        transform_array(wt, "OIHW", f"OIHW{k_bn}i{oc_bn}o"),
    ]
    check_operator([data, kernel], out, lambda *_: expected, values=values, rtol=1e-4, atol=1e-4)


def test_grouped_blocked_convolutions_check_their_groups():
    data = te.placeholder((1, 2, 5, 5, 8), name="data")
    kernel = te.placeholder((2, 1, 3, 3, 4, 8), name="kernel")
    with pytest.raises(OperatorError, match="4 input channels a group"):
        topi.nn.group_conv2d_NCHWc(data, kernel, 1, 1, 1, 3, "NCHW8c", "NCHW8c")
    with pytest.raises(OperatorError, match="does not divide a group's 4 output channels"):
        topi.nn.group_conv2d_NCHWc(data, kernel, 1, 1, 1, 4, "NCHW8c", "NCHW8c")
