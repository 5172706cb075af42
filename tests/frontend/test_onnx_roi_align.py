"""RoiAlign against onnxruntime (opsets 10 and 16), compiled to C: avg and max pooling, both
coordinate transformations, fixed and adaptive sampling (adaptive needs the regions at import),
float64 and float16, and the clean refusals of invalid attributes."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import calls, check_against_onnxruntime, make_model, tensor

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.support.errors import UserError

DOUBLE, HALF = TensorProto.DOUBLE, TensorProto.FLOAT16


def _model(shape=(2, 3, 7, 8), regions=5, opset=16, elem=TensorProto.FLOAT, rois=None, **attrs):
    """X, rois (graph inputs, or an initializer when `rois` is given) and batch_indices."""
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], **attrs)
    inputs = [tensor("x", shape, elem), tensor("batch", [regions], TensorProto.INT64)]
    initializers = {}
    if rois is None:
        inputs.append(tensor("rois", [regions, 4], elem))
    else:
        initializers["rois"] = rois
    return make_model(
        [node], inputs, [helper.make_empty_tensor_value_info("y")], initializers, opset
    )


def _inputs(model, shape=(2, 3, 7, 8), regions=5, dtype=np.float32, seed=0):
    """Random X, batch indices of the images there are, corners around (and beyond) the map."""
    rng = np.random.default_rng(seed)
    values = {
        "x": rng.standard_normal(shape).astype(dtype),
        "batch": rng.integers(0, shape[0], regions).astype(np.int64),
    }
    if any(i.name == "rois" for i in model.graph.input):
        values["rois"] = _regions(rng, shape, regions).astype(dtype)
    return values


def _regions(rng, shape, regions):
    rois = rng.uniform(-2, max(shape[2:]) + 2, (regions, 4))
    rois[0] = [1.0, 2.0, 1.0, 2.0]  # a point (1 x 1 without half_pixel)
    rois[1] = [5.0, 4.0, 1.0, 0.5]  # reversed corners
    return rois


CASES = {
    "avg_half_pixel": dict(output_height=3, output_width=2, sampling_ratio=2, spatial_scale=0.5),
    "avg_output_half_pixel": dict(
        output_height=2,
        output_width=4,
        sampling_ratio=1,
        coordinate_transformation_mode="output_half_pixel",
    ),
    "max_half_pixel": dict(mode="max", output_height=2, output_width=2, sampling_ratio=3),
    "max_output_half_pixel": dict(
        mode="max",
        output_height=3,
        output_width=3,
        sampling_ratio=2,
        spatial_scale=1.5,
        coordinate_transformation_mode="output_half_pixel",
    ),
    "opset10": dict(opset=10, output_height=2, output_width=3, sampling_ratio=2),
    "opset10_max": dict(opset=10, mode="max", output_height=3, output_width=2, sampling_ratio=1),
}


@pytest.mark.parametrize("case", CASES)
def test_roi_align_matches_onnxruntime(case):
    model = _model(**CASES[case])
    mod = check_against_onnxruntime(model, inputs=_inputs(model), compiled=True)
    assert "image.roi_align" in calls(mod)


def test_float64_and_float16():
    model = _model(elem=DOUBLE, output_height=2, output_width=2, sampling_ratio=2)
    check_against_onnxruntime(model, inputs=_inputs(model, dtype=np.float64), compiled=True)
    model = _model(elem=HALF, output_height=2, output_width=2, sampling_ratio=2)
    check_against_onnxruntime(
        model, inputs=_inputs(model, dtype=np.float16), rtol=2e-3, compiled=True
    )


def _adaptive(mode, transform, rois):
    model = _model(
        (1, 2, 9, 9),
        len(rois),
        rois=rois,
        mode=mode,
        output_height=3,
        output_width=3,
        coordinate_transformation_mode=transform,
    )
    return model, _inputs(model, (1, 2, 9, 9), len(rois))


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_adaptive_sampling_groups_known_regions_by_grid(mode, transform):
    # sampling_ratio 0: ceil(extent / output) samples per bin (1 to 7 here), one image.roi_align
    # per distinct grid. onnxruntime overflows on a reversed region with half_pixel (no samples
    # at all), so that one is checked against ONNX's reference below.
    rois = np.random.default_rng(1).uniform(-2, 11, (6, 4))
    rois[:, 2:] = rois[:, :2] + np.abs(rois[:, 2:] - rois[:, :2])
    rois[2] = [0.0, 0.0, 20.0, 3.0]
    model, inputs = _adaptive(mode, transform, rois.astype(np.float32))
    mod = check_against_onnxruntime(model, inputs=inputs, compiled=True)
    assert calls(mod).count("image.roi_align") > 1


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_adaptive_sampling_of_a_reversed_region_pools_zeros(mode):
    rois = np.array([[5, 4, 1, 0.5], [0, 0, 6, 6]], np.float32)  # no samples, then 2 x 2
    model, inputs = _adaptive(mode, "half_pixel", rois)
    mod, params = from_onnx(model)
    (expected,) = ReferenceEvaluator(model).run(None, inputs)
    result = compile_graph(mod, params)(**inputs)
    np.testing.assert_allclose(result, expected, atol=1e-6)
    assert not result[0].any()


def test_adaptive_sampling_of_regions_computed_at_run_time_is_refused():
    model = _model(output_height=2, output_width=2)  # sampling_ratio 0 by default
    with pytest.raises(UserError, match="sampling_ratio=0") as info:
        from_onnx(model)
    assert "RoiAlign" in info.value.message
    assert "sampling_ratio > 0" in info.value.hint


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (dict(mode="mean"), "mode 'mean'"),
        (dict(coordinate_transformation_mode="align_corners"), "coordinate_transformation_mode"),
        (dict(sampling_ratio=-1), "sampling_ratio -1"),
        (dict(output_height=0), "output_height"),
    ],
)
def test_invalid_attributes_are_refused_naming_the_node(attrs, message):
    model = _model(**{"sampling_ratio": 2, **attrs})
    with pytest.raises(OnnxImportError, match=f"RoiAlign node .*{message}"):
        from_onnx(model)


def test_three_dimensional_input_is_refused():
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], sampling_ratio=1)
    inputs = [tensor("x", [1, 2, 4]), tensor("rois", [2, 4]),
              tensor("batch", [2], TensorProto.INT64)]  # fmt: skip
    graph = helper.make_graph([node], "g", inputs, [tensor("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    with pytest.raises(OnnxImportError, match="RoiAlign"):
        from_onnx(model)
