"""Image operators against onnxruntime, compiled to C: Resize in its modes, Upsample,
GridSample, AffineGrid, DepthToSpace/SpaceToDepth, CenterCropPad, Col2Im."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import calls, check_against_onnxruntime, make_model, single_op_model, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx


def _resize(shape, attrs, scales=None, sizes=None, roi=None, opset=19):
    """A Resize of input x with roi / scales / sizes as initializers."""
    init = {"roi": np.array(roi or [], np.float32)}
    names = ["x", "roi"]
    if scales is not None:
        init["scales"] = np.array(scales, np.float32)
        names.append("scales")
    else:
        init["sizes"] = np.array(sizes, np.int64)
        names += ["", "sizes"]
    node = helper.make_node("Resize", names, ["y"], **attrs)
    out = helper.make_empty_tensor_value_info("y")
    return make_model([node], [tensor("x", shape)], [out], init, opset)


RESIZE_CASES = {
    # a scale whose output extent rounds down: the coordinates follow the scale, not the sizes
    "linear_downsample_fractional_scale": (
        (1, 2, 5, 7),
        {"mode": "linear"},
        dict(scales=[1, 1, 0.6, 0.7]),
    ),
    "cubic_align_corners": (
        (1, 1, 4, 5),
        {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
        dict(sizes=[1, 1, 7, 3]),
    ),
    "cubic_exclude_outside": (
        (1, 1, 4, 4),
        {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5},
        dict(scales=[1, 1, 1.7, 0.8]),
    ),
    "nearest_ceil_half_pixel": (
        (1, 1, 3, 4),
        {"mode": "nearest", "nearest_mode": "ceil"},
        dict(sizes=[1, 1, 7, 9]),
    ),
    "nearest_round_prefer_ceil_asymmetric": (
        (2, 1, 3, 3),
        {
            "mode": "nearest",
            "nearest_mode": "round_prefer_ceil",
            "coordinate_transformation_mode": "asymmetric",
        },
        dict(scales=[1, 1, 2.5, 1.5]),
    ),
    "pytorch_half_pixel": (
        (1, 1, 4, 4),
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        dict(sizes=[1, 1, 3, 1]),
    ),
    "antialias_cubic": (
        (1, 1, 8, 8),
        {"mode": "cubic", "antialias": 1},
        dict(scales=[1, 1, 0.4, 0.6]),
    ),
    "tf_crop_and_resize": (
        (1, 1, 4, 4),
        {
            "mode": "linear",
            "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": 3.0,
        },
        dict(sizes=[1, 1, 3, 3], roi=[0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7]),
    ),
    "axes_not_larger": (
        (1, 1, 2, 4),
        {"mode": "nearest", "axes": [3, 2], "keep_aspect_ratio_policy": "not_larger"},
        dict(sizes=[7, 3]),
    ),
    "half_pixel_symmetric": (
        (1, 1, 2, 2),
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
        dict(scales=[1, 1, 2.3, 2.94]),
    ),
}


@pytest.mark.parametrize("case", RESIZE_CASES)
def test_resize(case):
    shape, attrs, given = RESIZE_CASES[case]
    check_against_onnxruntime(_resize(shape, attrs, **given), compiled=True)


def test_resize_of_integers_gathers_nearest_and_refuses_linear():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    x = tensor("x", (1, 1, 2, 3), TensorProto.INT32)
    scales = {"scales": np.array([1, 1, 2, 2], np.float32)}
    model = make_model([node], [x], [helper.make_empty_tensor_value_info("y")], scales, 19)
    assert calls(check_against_onnxruntime(model, compiled=True)) == ["take", "take"]
    linear = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")
    model = make_model([linear], [x], [helper.make_empty_tensor_value_info("y")], scales, 19)
    with pytest.raises(OnnxImportError, match="linear interpolation of int32"):
        from_onnx(model)


def test_resize_opset_10_and_upsample_use_asymmetric_coordinates():
    scales = {"scales": np.array([1, 1, 2, 1.5], np.float32)}
    for op_type, opset in (("Resize", 10), ("Upsample", 9)):
        node = helper.make_node(op_type, ["x", "scales"], ["y"], mode="linear")
        model = make_model(
            [node], [tensor("x", (1, 2, 3, 4))], [tensor("y", (1, 2, 6, 6))], scales, opset
        )
        check_against_onnxruntime(model, compiled=True)


def _grid_model(data, grid, opset=22, **attrs):
    return single_op_model("GridSample", {"x": data, "grid": grid}, opset=opset, **attrs)


GRID_CASES = {
    "reflection_aligned": (
        (1, 2, 4, 5),
        (1, 3, 6, 2),
        dict(padding_mode="reflection", align_corners=1),
    ),
    "reflection_cubic": ((1, 1, 4, 3), (1, 2, 5, 2), dict(padding_mode="reflection", mode="cubic")),
    "border_nearest": ((2, 1, 3, 4), (2, 4, 2, 2), dict(padding_mode="border", mode="nearest")),
    "zeros_volumetric": ((1, 2, 3, 2, 4), (1, 2, 3, 2, 3), dict()),
    "opset16_bilinear": ((1, 1, 3, 3), (1, 2, 2, 2), dict(opset=16, mode="bilinear")),
}


@pytest.mark.parametrize("case", GRID_CASES)
def test_grid_sample(case):
    data, grid, attrs = GRID_CASES[case]
    model = _grid_model(data, grid, **attrs)
    rng = np.random.default_rng(3)
    inputs = {
        "x": rng.standard_normal(data).astype(np.float32),
        # beyond [-1, 1], so that the padding modes matter
        "grid": rng.uniform(-1.7, 1.7, grid).astype(np.float32),
    }
    check_against_onnxruntime(model, inputs=inputs, compiled=True)


@pytest.mark.parametrize(("size", "align"), [((2, 3, 4, 5), 0), ((1, 2, 3, 2, 4), 1)])
def test_affine_grid(size, align):
    rank = len(size) - 2
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align)
    model = make_model(
        [node],
        [tensor("theta", (size[0], rank, rank + 1))],
        [helper.make_empty_tensor_value_info("y")],
        {"size": np.array(size, np.int64)},
        opset=20,
    )
    check_against_onnxruntime(model, compiled=True)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    depth = single_op_model("DepthToSpace", {"x": (2, 8, 2, 3)}, blocksize=2, mode=mode)
    check_against_onnxruntime(depth, compiled=True)
    space = single_op_model("SpaceToDepth", {"x": (1, 2, 4, 6)}, blocksize=2, opset=13)
    check_against_onnxruntime(space, compiled=True)


def test_center_crop_pad_crops_and_pads_with_the_extra_at_the_end():
    model = single_op_model(
        "CenterCropPad",
        {"x": (7, 4, 3)},
        initializers={"shape": np.array([4, 7], np.int64)},
        axes=[0, -2],
        opset=18,
    )
    check_against_onnxruntime(model, compiled=True)


def test_col2im_with_strides_pads_and_dilations():
    inputs = {"x": (1, 2 * 2 * 3, 8)}
    init = {"image": np.array([5, 6], np.int64), "block": np.array([2, 3], np.int64)}
    model = single_op_model(
        "Col2Im",
        inputs,
        initializers=init,
        strides=[2, 1],
        pads=[0, 1, 1, 1],
        dilations=[2, 2],
        opset=18,
    )
    check_against_onnxruntime(model, compiled=True)
