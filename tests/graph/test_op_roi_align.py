"""image.roi_align: the TOPI lowering against the NumPy reference (compiled C and the TensorIR
interpreter), and the NumPy reference against ONNX's reference implementation of RoiAlign, on
regions inside, across and beyond the feature map, reversed and degenerate ones included; the
lowered function verifies and round-trips through the script printer."""

import numpy as np
import pytest
from graph_lowering import lower
from onnx.reference.ops.op_roi_align import RoiAlign

from tessel import te, topi
from tessel.graph import TensorType
from tessel.graph.op import OpTypeError, get_op
from tessel.script import parse
from tessel.testing import assert_structural_equal
from tessel.testing.topi import check_operator
from tessel.tir.verify import verify_well_formed

OP = get_op("image.roi_align")


def _inputs(seed, data_shape, count):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(data_shape).astype(np.float32)
    extent = max(data_shape[2:])
    rois = rng.uniform(-3, extent + 3, (count, 4)).astype(np.float32)
    rois[0] = [1, 1, 1, 1]  # a point: 1 x 1 without half_pixel, no extent with it
    images = rng.integers(0, data_shape[0], count).astype(np.int64)
    return data, rois, images


def _onnx_reference(data, rois, images, attrs):
    """ONNX's reference (onnx.reference), which takes one sampling ratio for both axes."""
    (out_h, out_w), (ratio, _) = attrs["pooled_size"], attrs["samples"]
    shape = (len(rois), data.shape[1], out_h, out_w)
    out = np.empty(shape, data.dtype).ravel()
    RoiAlign.roi_align_forward(
        shape,
        data.ravel(),
        attrs["spatial_scale"],
        *data.shape[2:],
        ratio,
        rois.ravel(),
        4,
        out,
        attrs["mode"],
        attrs["half_pixel"],
        images,
    )
    return out.reshape(shape)


MODES = [
    dict(mode="avg", half_pixel=True),
    dict(mode="avg", half_pixel=False),
    dict(mode="max", half_pixel=True),
    dict(mode="max", half_pixel=False),
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['mode']}-{m['half_pixel']}")
@pytest.mark.parametrize("ratio", [1, 3])
def test_reference_matches_onnx_reference(mode, ratio):
    data, rois, images = _inputs(ratio, (2, 3, 6, 8), 12)
    attrs = dict(pooled_size=(3, 2), samples=(ratio, ratio), spatial_scale=0.75, **mode)
    ours = OP.evaluate([data, rois, images], attrs)
    np.testing.assert_allclose(ours, _onnx_reference(data, rois, images, attrs), atol=1e-6)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m['mode']}-{m['half_pixel']}")
def test_lowering_matches_reference(mode):
    data, rois, images = _inputs(7, (2, 2, 5, 6), 6)
    attrs = dict(pooled_size=(2, 3), samples=(2, 3), spatial_scale=1.25, **mode)
    types = (TensorType(data.shape, "float32"), TensorType(rois.shape, "float32"),
             TensorType(images.shape, "int64"))  # fmt: skip
    inputs, outputs = lower("image.roi_align", types, attrs)
    check_operator(
        inputs,
        outputs,
        lambda *v: OP.evaluate(list(v), attrs),
        values=[data, rois, images],
        rtol=1e-5,
        atol=1e-5,
    )


def test_batch_index_out_of_range_reads_in_bounds():
    # onnxruntime refuses it at run time; the lowering clamps it (the reference too).
    data, rois, _ = _inputs(3, (2, 1, 4, 4), 3)
    images = np.array([-4, 1, 9], np.int64)
    attrs = dict(pooled_size=(2, 2), samples=(2, 2))
    types = (TensorType(data.shape, "float32"), TensorType(rois.shape, "float32"),
             TensorType(images.shape, "int64"))  # fmt: skip
    inputs, outputs = lower("image.roi_align", types, attrs)
    check_operator(
        inputs,
        outputs,
        lambda *v: OP.evaluate(list(v), attrs),
        values=[data, rois, images],
        backends=("c",),
    )
    clamped = OP.evaluate([data, rois, np.array([0, 1, 1])], attrs)
    np.testing.assert_array_equal(OP.evaluate([data, rois, images], attrs), clamped)


@pytest.mark.parametrize(
    ("types", "attrs", "name"),
    [
        ((TensorType((1, 2, 4, 4), "int32"),), {}, "data"),
        ((TensorType((1, 2, 4, 4), "float32"), TensorType((3, 4), "float64")), {}, "rois"),
        (
            (
                TensorType((1, 2, 4, 4), "float32"),
                TensorType((3, 4), "float32"),
                TensorType((2,), "int64"),
            ),
            {},
            "batch_indices",
        ),
        ((), {"mode": "mean"}, "mode"),
        ((), {"pooled_size": (0, 2)}, "pooled_size"),
    ],
)
def test_relation_errors_name_the_argument(types, attrs, name):
    base = (TensorType((1, 2, 4, 4), "float32"), TensorType((3, 4), "float32"),
            TensorType((3,), "int64"))  # fmt: skip
    full = (*types, *base[len(types) :])
    with pytest.raises(OpTypeError, match=f"image.roi_align: .*`{name}`"):
        OP.infer_type(full, {"pooled_size": (2, 2), "samples": (2, 2), **attrs})


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_lowered_function_verifies_and_round_trips(mode):
    data, rois = te.placeholder((1, 2, 5, 6), name="x"), te.placeholder((3, 4), name="rois")
    images = te.placeholder((3,), "int64", name="images")
    out = topi.image.roi_align(data, rois, images, (2, 2), 0.5, (2, 1), mode)
    func = te.create_prim_func([data, rois, images, out])
    verify_well_formed(func)
    assert_structural_equal(parse(func.script()), func)
