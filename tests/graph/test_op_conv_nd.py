"""nn.conv3d and nn.conv{1,2,3}d_transpose: the TOPI lowering against the NumPy reference, and
the references against PyTorch-free direct definitions (a transposed convolution is the adjoint
of the direct one)."""

import numpy as np
import pytest
from graph_lowering import lower

from tessel.graph import TensorType
from tessel.graph.op import get_op
from tessel.testing.topi import check_operator

CASES = [
    (
        "nn.conv3d",
        (1, 4, 4, 5, 3),
        (2, 2, 2, 3, 2),
        dict(strides=(1, 2, 1), padding=(1, 0, 1, 0, 1, 0), dilation=(1, 1, 2), groups=2),
    ),
    (
        "nn.conv1d_transpose",
        (2, 3, 5),
        (3, 2, 3),
        dict(strides=(2,), padding=(1, 0), output_padding=(1,), dilation=(2,)),
    ),
    (
        "nn.conv2d_transpose",
        (1, 4, 3, 3),
        (4, 1, 2, 3),
        dict(
            strides=(3, 2), padding=(0, 1, 1, 0), dilation=(1, 2), groups=2, output_padding=(0, 1)
        ),
    ),
    (
        "nn.conv3d_transpose",
        (1, 2, 2, 3, 2),
        (2, 2, 2, 2, 2),
        dict(strides=(2, 1, 2), padding=(0, 1, 0, 0, 0, 1), output_padding=(1, 0, 0)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_lowering_matches_reference(case):
    name, data, weight, attrs = case
    types = (TensorType(data, "float32"), TensorType(weight, "float32"))
    inputs, outputs = lower(name, types, attrs)
    op = get_op(name)
    assert outputs[0].const_shape() == op.infer_type(types, attrs).shape
    check_operator(
        inputs,
        outputs,
        lambda x, w: op.evaluate([x, w], attrs),
        rtol=1e-4,
        atol=1e-4,
        backends=("c",),
    )


def test_transpose_is_the_adjoint_of_the_convolution():
    """<conv(x, w), y> == <x, conv_transpose(y, w)> for the same strides, pads and dilation."""
    rng = np.random.default_rng(0)
    attrs = dict(strides=(2, 1, 2), padding=(1, 0, 0, 0, 1, 1), dilation=(1, 2, 1))
    x, w = rng.standard_normal((1, 2, 5, 6, 5)), rng.standard_normal((3, 2, 2, 2, 3))
    y = get_op("nn.conv3d").evaluate([x, w], attrs)
    g = rng.standard_normal(y.shape)
    short = get_op("nn.conv3d_transpose").evaluate([g, w], attrs).shape[2:]
    extra = tuple(a - b for a, b in zip(x.shape[2:], short, strict=True))
    back = get_op("nn.conv3d_transpose").evaluate([g, w], {**attrs, "output_padding": extra})
    assert np.isclose((y * g).sum(), (x * back).sum())
