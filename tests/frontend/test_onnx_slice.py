"""Slice in full generality: negative steps, out-of-range starts and ends (INT64_MIN + 1,
INT64_MAX), omitted axes and steps; checked against NumPy slicing and onnxruntime."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx_testing import (
    INT64,
    calls,
    check_against_onnxruntime,
    evaluate_main,
    make_model,
    run_onnxruntime,
    tensor,
    the_call,
)

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.converters.indexing import slice_bounds

BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min + 1
SHAPE = (5, 6, 7)

# (starts, ends, axes or None, steps or None)
CORPUS = {
    "simple": ([1], [3], [0], None),
    "omitted_axes_and_steps": ([1, 2], [4, 5], None, None),
    "negative_start_end": ([-3], [-1], [2], None),
    "end_int64_max": ([2], [BIG], [1], None),
    "reverse_whole_axis": ([-1], [SMALL], [1], [-1]),
    "reverse_int64_max_start": ([BIG], [SMALL], [2], [-1]),
    "reverse_step_2": ([6], [0], [2], [-2]),
    "reverse_to_minus_one_end": ([4], [-1], [0], [-1]),  # end -1 means the last element: empty
    "reverse_through_zero": ([3], [-100], [0], [-1]),
    "step_3_all_axes": ([0, 1, 0], [BIG, BIG, BIG], [0, 1, 2], [3, 2, 3]),
    "negative_axes": ([1, -2], [-1, BIG], [-1, -3], [1, 1]),
    "empty_forward": ([4], [2], [0], None),
    "empty_backward": ([1], [3], [0], [-1]),
    "start_below_range_backward": ([-100], [SMALL], [1], [-1]),  # ONNX: index 0; NumPy: empty
    "unsorted_axes": ([0, 1], [3, 4], [2, 0], [1, 1]),
    "mixed": ([-1, 0, 1], [SMALL, BIG, -1], [0, 1, 2], [-2, 4, 1]),
}


def _numpy_slice(x, starts, ends, axes, steps):
    """NumPy slicing, after ONNX's one difference: with a negative step, a start below the axis
    clamps to index 0 (NumPy would select nothing)."""
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        if step < 0 and start < -x.shape[axis]:
            start = 0
        index[axis] = slice(start, end, step)
    return x[tuple(index)]


def _slice_model(starts, ends, axes, steps):
    names = ["x", "starts", "ends"]
    inits = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
    if axes is not None or steps is not None:
        names.append("axes" if axes is not None else "")
        if axes is not None:
            inits["axes"] = np.array(axes, np.int64)
    if steps is not None:
        names.append("steps")
        inits["steps"] = np.array(steps, np.int64)
    node = helper.make_node("Slice", names, ["y"])
    return make_model([node], [tensor("x", SHAPE)], [tensor("y", None)], inits, opset=13)


@pytest.mark.parametrize("case", CORPUS)
def test_slice_corpus_matches_numpy_and_onnxruntime(case):
    starts, ends, axes, steps = CORPUS[case]
    x = np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE)
    model = _slice_model(starts, ends, axes, steps)
    mod = check_against_onnxruntime(model, inputs={"x": x})
    expected = _numpy_slice(x, starts, ends, axes, steps)
    np.testing.assert_array_equal(evaluate_main(mod, {"x": x})[0], expected)
    assert calls(mod) in (["strided_slice"], [])


def test_slice_with_a_huge_step_imports():
    # onnx's own shape inference crashes the process on this node; the importer types it itself.
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    inits = {"s": np.array([0]), "e": np.array([3]), "a": np.array([0]), "t": np.array([BIG])}
    model = make_model([node], [tensor("x", (3,))], [tensor("y", ("n",))], inits, opset=13)
    mod = check_against_onnxruntime(model)
    assert mod["main"].ret_type.shape == (1,)


def test_slice_structure():
    mod, _ = from_onnx(_slice_model([-1, 1], [SMALL, BIG], [1, 2], [-2, 1]))
    call = mod["main"].body
    # axis 2 from 1 to the end; axis 1 from 5 down through 0 (end -(6 + 1): before index 0)
    assert dict(call.attrs) == {"begin": (5, 1), "end": (-7, 7), "strides": (-2, 1), "axes": (1, 2)}


def test_whole_axis_slices_are_dropped():
    mod, _ = from_onnx(_slice_model([0, 0], [BIG, 3], [0, 1], None))
    assert dict(mod["main"].body.attrs)["axes"] == (1,)
    identity, _ = from_onnx(_slice_model([0], [BIG], [0], None))
    assert calls(identity) == []


def test_slice_folds_on_shapes():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "b", "e"], ["last2"]),
        helper.make_node("Concat", ["minus_one", "last2"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", (2, 3, 4, 5))],
        [tensor("y", (6, 4, 5))],
        {"b": np.array([-2]), "e": np.array([BIG]), "minus_one": np.array([-1])},
    )
    assert calls(check_against_onnxruntime(model)) == ["reshape"]


def test_slice_with_starts_from_the_graph_is_rejected():
    node = helper.make_node("Slice", ["x", "s", "e"], ["y"], name="dyn")
    model = make_model(
        [node],
        [tensor("x", (4,)), tensor("s", (1,), INT64)],
        [tensor("y", None)],
        {"e": np.array([3])},
    )
    with pytest.raises(Exception, match="(starts|static shape)"):
        from_onnx(model)


@settings(max_examples=150, deadline=None)
@given(
    dim=st.integers(0, 9),
    start=st.one_of(st.integers(-12, 12), st.sampled_from([BIG, SMALL, SMALL - 1])),
    end=st.one_of(st.integers(-12, 12), st.sampled_from([BIG, SMALL, SMALL - 1])),
    step=st.one_of(st.integers(-4, -1), st.integers(1, 4), st.sampled_from([BIG, SMALL])),
)
def test_slice_bounds_select_what_onnxruntime_selects(dim, start, end, step):
    x = np.arange(dim, dtype="float32")
    begin, stop, stride = slice_bounds(start, end, step, dim)
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    inits = {
        "s": np.array([start]),
        "e": np.array([end]),
        "a": np.array([0]),
        "t": np.array([step]),
    }
    # A symbolic output dimension: onnx 1.23's shape inference crashes on steps near INT64_MAX.
    model = make_model([node], [tensor("x", (dim,))], [tensor("y", ("n",))], inits, opset=13)
    expected = run_onnxruntime(model, {"x": x})[0]
    # Read back the way strided_slice (and NumPy) read them: negative bounds count from the end.
    np.testing.assert_array_equal(x[begin:stop:stride], expected)


def test_slice_attributes_before_opset_10():
    """Opsets 7-9 give starts, ends and axes as attributes (no steps)."""
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[100, -1], axes=[0, -1])
    model = make_model([node], [tensor("x", (4, 5))], [tensor("y", (3, 2))], opset=9)
    mod = check_against_onnxruntime(model)
    assert the_call(mod, "strided_slice").attrs["begin"] == (1, 2)
