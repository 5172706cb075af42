"""Graph-level layout steps: decompositions of index maps into pad / reshape / transpose (or a
gather), each checked against evaluating the map and by the forward-then-reverse round trip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.schedule.layout_steps import (
    LayoutRecord,
    evaluate_on_arrays,
    fuse_steps,
    reorder_steps,
    split_steps,
    steps_for_index_map,
)
from tessel.tir.index_map import IndexMap

CASES = [
    ("seed conv2d weight", lambda o, i, h, w: (o // 4, i // 4, o % 4, i % 4, h, w), (32, 3, 7, 7),
     ["Pad", "Reshape", "Transpose"]),
    ("NCHW to NCHW4c", lambda n, c, h, w: (n, c // 4, h, w, c % 4), (2, 8, 3, 3), ["Reshape", "Transpose"]),
    ("padded split", lambda i: (i // 4, i % 4), (14,), ["Pad", "Reshape"]),
    ("seed 127 to 128", lambda a, b: ((a // 32) * 32 + a % 32, (b // 32) * 32 + b % 32), (127, 127), ["Pad"]),
    ("transpose", lambda i, j: (j, i), (3, 5), ["Transpose"]),
    ("three digits", lambda i, j: (i // 2 % 3, i // 6, j, i % 2), (12, 5), ["Reshape", "Transpose"]),
    ("not a digit map", lambda i, j: (j, (i + j) % 4), (4, 4), ["Gather"]),
]


def _by_evaluation(imap, shape, new_shape, x):
    points = np.indices(shape)
    env = {v: points[k] for k, v in enumerate(imap.initial_indices)}
    where = tuple(np.broadcast_to(evaluate_on_arrays(e, env), shape) for e in imap.final_indices)
    expected = np.zeros(new_shape, x.dtype)
    expected[where] = x
    return expected


@pytest.mark.parametrize(("label", "func", "shape", "kinds"), CASES, ids=[c[0] for c in CASES])
def test_index_map_steps_equal_the_map_and_round_trip(label, func, shape, kinds):
    imap = IndexMap.from_func(func)
    new_shape = tuple(int(e.value) for e in imap.map_shape(shape))
    record = LayoutRecord("x", shape, steps_for_index_map(imap.initial_indices, imap.final_indices,
                                                          shape, 0, new_shape))
    assert [type(s).__name__ for s in record.steps] == kinds
    x = np.random.default_rng(0).integers(1, 100, shape).astype(np.int8)
    forward = record.forward(x)
    np.testing.assert_array_equal(forward, _by_evaluation(imap, shape, new_shape, x))
    np.testing.assert_array_equal(record.reverse(forward), x)
    assert str(record).startswith(f"x {list(shape)} -> {list(new_shape)}")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_random_split_fuse_reorder_sequences_round_trip(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    record = LayoutRecord("x", shape)
    for _ in range(data.draw(st.integers(1, 3))):
        current = record.new_shape
        kind = data.draw(st.sampled_from(["split", "fuse", "reorder"]))
        if kind == "split":
            axis = data.draw(st.integers(0, len(current) - 1))
            inner = data.draw(st.integers(1, 4))
            steps = split_steps(current, axis, [-(-current[axis] // inner), inner], 0)
        elif kind == "fuse" and len(current) > 1:
            start = data.draw(st.integers(0, len(current) - 2))
            steps = fuse_steps(current, [start, start + 1])
        else:
            steps = reorder_steps(current, data.draw(st.permutations(range(len(current)))))
        record = record.then(steps)
    x = np.arange(int(np.prod(shape))).reshape(shape) + 1
    forward = record.forward(x)
    assert forward.shape == record.new_shape
    np.testing.assert_array_equal(record.reverse(forward), x)
    assert np.count_nonzero(forward) == x.size  # every element once, padding zero


def test_fuse_of_non_consecutive_axes_is_refused():
    with pytest.raises(ValueError, match="consecutive"):
        fuse_steps((2, 3, 4), [0, 2])
