"""topi.image.resize2d against PyTorch's F.interpolate and a NumPy reference (ONNX Resize's
formulas, one interpolation matrix per axis), in the interpreter and in compiled C."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812  (PyTorch's own spelling)

from tessel import te
from tessel.testing.topi import check_operator
from tessel.topi.image.resize import resize2d
from tessel.topi.utils import OperatorError


def nchw_input(shape, layout, dtype="float32"):
    """A placeholder for an NCHW `shape`, laid out as `layout`."""
    n, c, h, w = shape
    return te.placeholder((n, c, h, w) if layout == "NCHW" else (n, h, w, c), dtype, name="data")


def in_layout(reference, layout):
    """`reference` (NCHW arrays in and out) applied to arrays in `layout`."""
    if layout == "NCHW":
        return reference
    return lambda a: reference(a.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)


def torch_interpolate(size, mode, **kwargs):
    def reference(a):
        return F.interpolate(
            torch.from_numpy(np.ascontiguousarray(a)), size=size, mode=mode, **kwargs
        ).numpy()

    return reference


# (NCHW input shape, output size)
SHAPES = [((1, 2, 7, 5), (13, 9)), ((1, 3, 13, 7), (5, 4)), ((1, 1, 6, 6), (12, 3))]

# (torch mode, torch arguments, tessel arguments)
TORCH_MODES = [
    ("nearest", {}, dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric")),
    (
        "nearest-exact",
        {},
        dict(method="nearest_neighbor", rounding_method="round_prefer_ceil"),
    ),
    ("bilinear", dict(align_corners=False), dict(method="linear")),
    ("bilinear", dict(align_corners=True), dict(coordinate_transformation_mode="align_corners")),
    ("bicubic", dict(align_corners=False), dict(method="cubic", bicubic_alpha=-0.75)),
    (
        "bicubic",
        dict(align_corners=True),
        dict(method="cubic", bicubic_alpha=-0.75, coordinate_transformation_mode="align_corners"),
    ),
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(("mode", "torch_args", "args"), TORCH_MODES)
@pytest.mark.parametrize(("shape", "size"), SHAPES)
def test_resize_matches_torch(shape, size, mode, torch_args, args, layout):
    data = nchw_input(shape, layout)
    out = resize2d(data, None, size, layout, **args)
    check_operator([data], [out], in_layout(torch_interpolate(size, mode, **torch_args), layout))


def np_source(mode, extent, out, roi):
    """Input coordinates of the output positions of one axis, in float64 (ONNX Resize)."""
    x, scale = np.arange(out, dtype="float64"), extent / out
    if mode == "asymmetric":
        return x * scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    if mode == "align_corners":
        return x * (extent - 1) / (out - 1) if out > 1 else np.zeros(out)
    if mode == "tf_crop_and_resize":
        start, end = roi
        if out == 1:
            return np.full(1, 0.5 * (start + end) * (extent - 1))
        return start * (extent - 1) + x * (end - start) * (extent - 1) / (out - 1)
    if mode == "pytorch_half_pixel" and out == 1:
        return np.zeros(1)
    return (x + 0.5) * scale - 0.5


NP_ROUNDING = {
    "round": np.rint,
    "floor": np.floor,
    "ceil": np.ceil,
    "round_prefer_floor": lambda s: np.ceil(s - 0.5),
    "round_prefer_ceil": lambda s: np.floor(s + 0.5),
}


def cubic_kernel(d, alpha):
    d = np.abs(d)
    near = ((alpha + 2) * d - (alpha + 3)) * d * d + 1
    far = alpha * d**3 - 5 * alpha * d**2 + 8 * alpha * d - 4 * alpha
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def np_matrix(source, extent, method, rounding="floor", alpha=-0.5, exclude=False):
    """The (out, extent) matrix that interpolates one axis; edge pixels repeat past the border."""
    matrix = np.zeros((len(source), extent))
    for o, s in enumerate(source):
        if method == "nearest_neighbor":  # exact ties and integers survive rounding to 9 places
            taps = [(int(NP_ROUNDING[rounding](np.round(s, 9))), 1.0)]
        elif method == "linear":
            taps = [
                (int(np.floor(s)), 1 - (s - np.floor(s))),
                (int(np.floor(s)) + 1, s - np.floor(s)),
            ]
        else:
            base = int(np.floor(s))
            taps = [(base + k, float(cubic_kernel(s - base - k, alpha))) for k in (-1, 0, 1, 2)]
        if exclude:
            taps = [(i, w) for i, w in taps if 0 <= i < extent]
            total = sum(w for _, w in taps)
            taps = [(i, w / total) for i, w in taps]
        for index, weight in taps:
            matrix[o, min(max(index, 0), extent - 1)] += weight
    return matrix


def np_resize(
    a,
    size,
    mode,
    method,
    rounding="floor",
    roi=(0, 0, 1, 1),
    alpha=-0.5,
    exclude=False,
    extrapolation=0.0,
):
    """ONNX Resize of an NCHW array, separably: out = My @ a @ Mx^T."""
    sources = [np_source(mode, a.shape[2 + d], size[d], (roi[d], roi[d + 2])) for d in range(2)]
    my, mx = (
        np_matrix(s, a.shape[2 + d], method, rounding, alpha, exclude)
        for d, s in enumerate(sources)
    )
    out = np.einsum("yh,nchw,xw->ncyx", my, a.astype("float64"), mx)
    if mode == "tf_crop_and_resize":
        outside = [(s < 0) | (s > a.shape[2 + d] - 1) for d, s in enumerate(sources)]
        out[:, :, :, outside[1]] = extrapolation
        out[:, :, outside[0], :] = extrapolation
    return out.astype(a.dtype)


MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["linear", "nearest_neighbor"])
@pytest.mark.parametrize(("shape", "size"), [((1, 2, 7, 5), (13, 1)), ((1, 1, 13, 7), (5, 9))])
def test_coordinate_modes_match_numpy(shape, size, method, mode):
    data = nchw_input(shape, "NCHW")
    out = resize2d(data, None, size, method=method, coordinate_transformation_mode=mode)
    rounding = "round" if mode == "align_corners" else "floor"  # TVM's default for nearest
    check_operator([data], [out], lambda a: np_resize(a, size, mode, method, rounding))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("rounding", sorted(NP_ROUNDING))
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
def test_rounding_methods_match_numpy(rounding, mode, layout):
    size = (13, 3)  # align_corners 7 -> 13 puts every other row exactly halfway
    data = nchw_input((1, 2, 7, 5), layout)
    out = resize2d(data, [], size, layout, "nearest_neighbor", mode, rounding)
    reference = in_layout(lambda a: np_resize(a, size, mode, "nearest_neighbor", rounding), layout)
    check_operator([data], [out], reference)


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("size", [(9, 13), (1, 4)])
def test_tf_crop_and_resize_extrapolates(size, method):
    roi = (-0.2, 0.1, 0.9, 1.3)  # partly outside the image on two sides
    data = nchw_input((1, 2, 7, 5), "NCHW")
    out = resize2d(
        data,
        roi,
        size,
        method=method,
        coordinate_transformation_mode="tf_crop_and_resize",
        rounding_method="round_prefer_ceil",
        extrapolation_value=-3.5,
    )

    def reference(a):
        return np_resize(
            a, size, "tf_crop_and_resize", method, "round_prefer_ceil", roi, extrapolation=-3.5
        )

    check_operator([data], [out], reference)


@pytest.mark.parametrize("exclude", [0, 1])
@pytest.mark.parametrize("mode", ["half_pixel", "asymmetric"])
def test_cubic_matches_numpy(mode, exclude):
    size = (13, 4)
    data = nchw_input((1, 2, 7, 5), "NHWC")
    out = resize2d(data, None, size, "NHWC", "cubic", mode, bicubic_exclude=exclude)
    reference = in_layout(
        lambda a: np_resize(a, size, mode, "cubic", exclude=bool(exclude)), "NHWC"
    )
    check_operator([data], [out], reference, rtol=1e-4, atol=1e-5)


def test_integer_data_and_out_dtype():
    values = [np.random.default_rng(2).integers(-50, 50, (1, 2, 7, 5)).astype("int32")]
    data = nchw_input((1, 2, 7, 5), "NCHW", "int32")
    nearest = resize2d(
        data, None, (13, 9), method="nearest_neighbor", coordinate_transformation_mode="asymmetric"
    )
    assert nearest.dtype == "int32"
    check_operator(
        [data],
        [nearest],
        lambda a: np_resize(a, (13, 9), "asymmetric", "nearest_neighbor"),
        values=values,
    )
    linear = resize2d(data, None, (13, 9), out_dtype="float32")
    assert linear.dtype == "float32"
    as_float = lambda a: np_resize(a.astype("float64"), (13, 9), "half_pixel", "linear")  # noqa: E731
    check_operator([data], [linear], as_float, values=values, rtol=1e-5, atol=1e-4)
    rounded = resize2d(data, None, (13, 9))
    check_operator([data], [rounded], lambda a: np.rint(as_float(a)), values=values)


def test_output_shape_and_name():
    data = nchw_input((1, 3, 7, 5), "NHWC")
    out = resize2d(data, None, (13, 2), "NHWC")
    assert out.const_shape() == (1, 13, 2, 3)
    assert out.name == "resize"


RESIZE_ERRORS = [
    (dict(layout="NCW"), "argument `layout`"),
    (dict(layout="NHW"), "argument `layout`"),
    (dict(method="area"), "argument `method`.*'area'"),
    (dict(coordinate_transformation_mode="center"), "argument `coordinate_transformation_mode`"),
    (dict(method="nearest_neighbor", rounding_method="even"), "argument `rounding_method`"),
    (dict(size=(0, 3)), "argument `size`"),
    (dict(size=(3,)), "argument `size`"),
    (dict(coordinate_transformation_mode="tf_crop_and_resize"), "argument `roi`"),
]


@pytest.mark.parametrize(("changes", "message"), RESIZE_ERRORS)
def test_resize_errors_name_the_argument(changes, message):
    data = te.placeholder((1, 2, 7, 5), name="data")
    arguments = dict(roi=None, size=(3, 3))
    arguments.update(changes)
    with pytest.raises(OperatorError, match=f"resize2d: {message}"):
        resize2d(data, **arguments)


def test_tf_crop_and_resize_of_integers_rounds_the_extrapolation_value():
    data = nchw_input((1, 1, 7, 5), "NCHW", "int32")
    values = [np.random.default_rng(3).integers(-9, 9, (1, 1, 7, 5)).astype("int32")]
    roi = (-0.5, 0.0, 1.0, 1.0)
    out = resize2d(
        data,
        roi,
        (9, 4),
        method="nearest_neighbor",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=-3.7,
    )

    def reference(a):
        return np_resize(
            a, (9, 4), "tf_crop_and_resize", "nearest_neighbor", "floor", roi, extrapolation=-4
        )

    check_operator([data], [out], reference, values=values)


def test_symbolic_spatial_extent_is_an_error():
    data = te.placeholder((1, 2, te.var("h"), 5), name="data")
    with pytest.raises(OperatorError, match="resize2d: argument `data`.*constants"):
        resize2d(data, None, (3, 3))
