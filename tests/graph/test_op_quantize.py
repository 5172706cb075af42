"""qnn.quantize and qnn.requantize: the TOPI lowering (TensorIR interpreter and compiled C)
against the NumPy reference, rounding half to even and saturating; their type relations."""

import numpy as np
import pytest
from graph_lowering import lower

from tessel.graph import TensorType
from tessel.graph.op import OpTypeError, get_op
from tessel.graph.type_util import type_equal
from tessel.testing.topi import check_operator


def _run(op_name, values, out_dtype):
    """Lower `op_name` on placeholders of the values' types and compare every backend with the
    reference; returns the reference's result."""
    types = tuple(TensorType(v.shape, str(v.dtype)) for v in values)
    attrs = {"out_dtype": out_dtype}
    inputs, outputs = lower(op_name, types, attrs)
    op = get_op(op_name)
    assert type_equal(op.infer_type(types, attrs), TensorType(values[0].shape, out_dtype))
    check_operator(inputs, outputs, lambda *a: op.evaluate(a, attrs), values=values, atol=0)
    return op.evaluate(values, attrs)


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, 1000.0, -1000.0], np.float32)
    result = _run("qnn.quantize", [x, np.float32(1.0), np.int8(0)], "int8")
    np.testing.assert_array_equal(result, [0, 2, 2, 0, -2, -2, 3, 127, -128])


def test_quantize_per_axis_scale_and_zero_point_broadcast():
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, (2, 3, 4)).astype(np.float32)
    scale = np.array([0.02, 0.1, 0.5], np.float32).reshape(3, 1)
    zero = np.array([0, 128, 255], np.uint8).reshape(3, 1)
    result = _run("qnn.quantize", [x, scale, zero], "uint8")
    assert result.min() == 0  # some saturate at both ends
    assert result.max() == 255


@pytest.mark.parametrize("out_dtype", ["int16", "uint16"])
def test_quantize_16_bit(out_dtype):
    x = np.linspace(-40000, 80000, 24, dtype=np.float32).reshape(4, 6)
    _run("qnn.quantize", [x, np.float32(0.75), np.zeros((), out_dtype)], out_dtype)


def test_requantize_scales_an_int32_accumulator():
    acc = np.array([[-6, -2, 2, 6, 10, 4000], [-4000, 0, 1, 3, 5, 7]], np.int32)
    result = _run("qnn.requantize", [acc, np.float32(0.25), np.int8(3)], "int8")
    np.testing.assert_array_equal(result, [[1, 3, 3, 5, 5, 127], [-128, 3, 3, 4, 4, 5]])


def test_requantize_per_channel_multiplier():
    acc = np.arange(-600, 600, 50, dtype=np.int32).reshape(1, 4, 6)
    multiplier = np.array([0.25, 0.5, 0.125, 0.01], np.float32).reshape(4, 1)
    _run("qnn.requantize", [acc, multiplier, np.uint8(128)], "uint8")


def test_empty_tensor():
    x = np.zeros((0, 3), np.float32)
    _run("qnn.quantize", [x, np.float32(0.1), np.uint8(4)], "uint8")


@pytest.mark.parametrize(
    ("op", "types", "out_dtype", "name"),
    [
        ("qnn.quantize", [(4,), "float32", (), "float32", (), "int8"], "int32", "out_dtype"),
        ("qnn.quantize", [(4,), "float32", (), "float64", (), "int8"], "int8", "scale"),
        ("qnn.quantize", [(4,), "float32", (), "float32", (), "uint8"], "int8", "zero_point"),
        ("qnn.quantize", [(4,), "float32", (3,), "float32", (), "int8"], "int8", "scale"),
        ("qnn.requantize", [(4,), "float32", (), "float32", (), "int8"], "int8", "data"),
    ],
)
def test_relation_errors_name_the_argument(op, types, out_dtype, name):
    shapes_dtypes = list(zip(types[::2], types[1::2], strict=True))
    args = [TensorType(shape, dtype) for shape, dtype in shapes_dtypes]
    with pytest.raises(OpTypeError, match=f"`{name}`"):
        get_op(op).infer_type(args, {"out_dtype": out_dtype})
