"""Layout transforms against NumPy, in the reference interpreter and compiled C."""

import numpy as np
import pytest

from tessel import te
from tessel.arith.dims import evaluate_dim, symbol
from tessel.driver import build
from tessel.ir.expr import FloorDiv, FloorMod, IntImm
from tessel.ir.functor import post_order
from tessel.testing.topi import check_operator
from tessel.topi.nn.flatten import flatten
from tessel.topi.transform import (
    broadcast_to,
    concatenate,
    expand_dims,
    reshape,
    reshape_groups,
    split,
    squeeze,
    strided_slice,
    tile,
    transpose,
)
from tessel.topi.utils import OperatorError

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


@pytest.mark.parametrize(
    ("shape", "newshape"),
    [((2, 3, 4), (4, 6)), ((2, 3, 4), (-1, 2)), ((5, 3), (3, 1, 5)), ((7,), (7, 1)), ((1, 1), ())],
)
def test_reshape(shape, newshape):
    a = te.placeholder(shape, name="a")
    check_operator([a], reshape(a, newshape), lambda x: x.reshape(newshape))


@pytest.mark.parametrize(
    ("newshape", "match"),
    [
        ((5, 5), "24 elements"),
        ((-1, -1), "at most one -1"),
        ((5, -1), "cannot infer"),
        ((0, -1), "cannot infer"),
    ],
)
def test_reshape_rejects_bad_sizes(newshape, match):
    a = te.placeholder((2, 3, 4), name="a")
    with pytest.raises(OperatorError, match=rf"reshape: argument `newshape`.*{match}"):
        reshape(a, newshape)


BATCH, SEQ = symbol("batch", 1, 64), symbol("seq", 1, 512)


@pytest.mark.parametrize(
    ("shape", "newshape", "groups"),
    [
        (
            (BATCH, 12, SEQ, SEQ),
            (BATCH * 12, SEQ, SEQ),
            [((0, 1), (0,)), ((2,), (1,)), ((3,), (2,))],
        ),
        ((BATCH, SEQ, 384), (BATCH, SEQ, 12, 32), [((0,), (0,)), ((1,), (1,)), ((2,), (2, 3))]),
        ((BATCH, 1, SEQ), (BATCH, SEQ, 1), [((0,), (0,)), ((1, 2), (1,))]),
        ((BATCH, SEQ), (SEQ, BATCH), None),  # no runs: the linear form
        ((6, 4), (4, 6), None),
    ],
)
def test_reshape_groups_pairs_runs_of_axes_holding_the_same_elements(shape, newshape, groups):
    found = reshape_groups(shape, newshape)
    if groups is None:
        assert found is None
    else:
        assert [(tuple(i), tuple(o)) for i, o in found] == groups


@pytest.mark.parametrize(
    ("shape", "newshape"),
    [
        ((BATCH, 12, SEQ, 4), (BATCH * 12, SEQ, 4)),
        ((BATCH * 12, SEQ, 4), (BATCH, 12, SEQ, 4)),
        ((BATCH, SEQ, 24), (BATCH, SEQ, 2, 12)),
        ((BATCH, 1, SEQ), (BATCH, SEQ, 1)),
        ((BATCH, SEQ), (SEQ, BATCH)),
    ],
)
def test_symbolic_reshape_matches_numpy_at_every_size(shape, newshape):
    a = te.placeholder(shape, name="a")
    out = reshape(a, newshape)
    library = build(te.create_prim_func([a, out]))
    rng = np.random.default_rng(0)
    for batch, seq in [(1, 1), (2, 3), (3, 17)]:
        sizes = {BATCH: batch, SEQ: seq}
        in_shape = tuple(evaluate_dim(d, sizes) for d in shape)
        out_shape = tuple(evaluate_dim(d, sizes) for d in newshape)
        x = rng.standard_normal(in_shape).astype("float32")
        result = np.zeros(out_shape, "float32")
        library(x, result)
        np.testing.assert_array_equal(result, x.reshape(out_shape))


def test_a_symbolic_reshape_along_runs_divides_by_constants_only():
    # (b, 12, s, s) -> (b * 12, s, s): the input's index is (i // 12, i % 12, j, k), not a
    # linear position divided by s twice, which the simplifier cannot undo over symbols.
    a = te.placeholder((BATCH, 12, SEQ, SEQ), name="a")
    out = reshape(a, (BATCH * 12, SEQ, SEQ))
    divisors = [
        node.b for node in post_order(out.op.body[0]) if isinstance(node, FloorDiv | FloorMod)
    ]
    assert divisors and all(isinstance(d, IntImm) for d in divisors)


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((2, 3, 5), None), ((2, 3, 5), (1, -1, 0)), ((3, 1, 2, 5), (-1, 0, 2, 1)), ((7,), (0,))],
)
def test_transpose(shape, axes):
    a = te.placeholder(shape, name="a")
    check_operator([a], transpose(a, axes), lambda x: np.transpose(x, axes))


@pytest.mark.parametrize("axes", [(0, 0, 1), (0, 1), (0, 1, 3)])
def test_transpose_rejects_bad_axes(axes):
    a = te.placeholder((2, 3, 5), name="a")
    with pytest.raises(OperatorError, match="transpose: argument `axes`"):
        transpose(a, axes)


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((1, 3, 1, 5), None), ((1, 3, 1, 5), -2), ((1, 3, 1, 5), (0, 2)), ((1, 1), None)],
)
def test_squeeze(shape, axis):
    a = te.placeholder(shape, name="a")
    check_operator([a], squeeze(a, axis), lambda x: np.squeeze(x, axis))


def test_squeeze_rejects_wide_or_bad_axis():
    a = te.placeholder((1, 3), name="a")
    with pytest.raises(OperatorError, match="squeeze: argument `axis`: axis 1 has extent 3"):
        squeeze(a, 1)
    with pytest.raises(OperatorError, match="squeeze: argument `axis`: 2 is out of range"):
        squeeze(a, 2)


@pytest.mark.parametrize(
    ("shape", "axis", "count"), [((3, 5), 1, 1), ((3, 5), -1, 2), ((7,), 0, 3), ((2, 3), -3, 1)]
)
def test_expand_dims(shape, axis, count):
    a = te.placeholder(shape, name="a")
    position = axis + len(shape) + 1 if axis < 0 else axis
    expected_shape = shape[:position] + (1,) * count + shape[position:]
    check_operator([a], expand_dims(a, axis, count), lambda x: x.reshape(expected_shape))


def test_expand_dims_rejects_bad_axis():
    a = te.placeholder((3, 5), name="a")
    with pytest.raises(OperatorError, match="expand_dims: argument `axis`: 3 is out of range"):
        expand_dims(a, 3)
    with pytest.raises(OperatorError, match="expand_dims: argument `num_newaxis`"):
        expand_dims(a, 0, -1)


@pytest.mark.parametrize(
    ("shape", "target"), [((3, 1), (2, 3, 5)), ((1,), (4,)), ((5,), (3, 5)), ((2, 3), (2, 3))]
)
def test_broadcast_to(shape, target):
    a = te.placeholder(shape, name="a")
    check_operator([a], broadcast_to(a, target), lambda x: np.broadcast_to(x, target))


def test_broadcast_to_rejects_incompatible_shape():
    a = te.placeholder((3, 2), name="a")
    with pytest.raises(
        OperatorError, match=r"broadcast_to: argument `shape`: cannot broadcast shape \[3, 2\]"
    ):
        broadcast_to(a, (3, 3))
    with pytest.raises(OperatorError, match="broadcast_to: argument `shape`"):
        broadcast_to(a, (2,))


@pytest.mark.parametrize(
    ("shape", "reps"), [((2, 3), (2, 3)), ((3,), (2, 1, 2)), ((2, 1, 3), (3,)), ((5,), ())]
)
def test_tile(shape, reps):
    a = te.placeholder(shape, name="a")
    check_operator([a], tile(a, reps), lambda x: np.tile(x, reps))


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], -1),
        ([(3, 1, 2), (3, 2, 2), (3, 3, 2)], -2),
        ([(5,)], 0),
    ],
)
def test_concatenate(shapes, axis):
    tensors = [te.placeholder(shape, name=f"a{k}") for k, shape in enumerate(shapes)]
    check_operator(tensors, concatenate(tensors, axis), lambda *xs: np.concatenate(xs, axis))


def test_concatenate_rejects_mismatched_shapes():
    a, b = te.placeholder((2, 3), name="a"), te.placeholder((2, 4), name="b")
    with pytest.raises(
        OperatorError, match=r"concatenate: argument `a_tuple`: tensor 1 has shape \[2, 4\]"
    ):
        concatenate([a, b], axis=0)
    with pytest.raises(OperatorError, match="concatenate: argument `axis`"):
        concatenate([a, b], axis=2)
    c = te.placeholder((2, 3), "int32", name="c")
    with pytest.raises(OperatorError, match="concatenate: argument `a_tuple`: tensor 1 is int32"):
        concatenate([a, c], axis=0)


@pytest.mark.parametrize(
    ("shape", "sections", "axis"),
    [
        ((6, 5), 3, 0),
        ((3, 10), 5, -1),
        ((7, 3), [2, 5], 0),
        ((2, 9), [-4, 7], -1),
        ((4, 5, 3), 1, 1),
    ],
)
def test_split(shape, sections, axis):
    a = te.placeholder(shape, name="a")
    check_operator([a], split(a, sections, axis), lambda x: np.split(x, sections, axis))


def test_split_rejects_uneven_sections():
    a = te.placeholder((7, 3), name="a")
    with pytest.raises(
        OperatorError, match="split: argument `indices_or_sections`: 2 sections do not divide"
    ):
        split(a, 2)
    with pytest.raises(OperatorError, match="split: argument `indices_or_sections`: positions"):
        split(a, [5, 2])


@pytest.mark.parametrize(
    ("begin", "end", "strides", "numpy_index"),
    [
        ([1, 0], [3, 4], None, np.s_[1:3, 0:4]),
        ([0], [INT64_MAX], [2], np.s_[0::2]),
        ([-1, -2], [INT64_MIN + 1, -6], [-1, -1], np.s_[::-1, -2:-6:-1]),
        ([-2, 4, 1], [-100, 1, 3], [-2, -2, 1], np.s_[-2:-100:-2, 4:1:-2, 1:3]),
        ([4, 0], [INT64_MIN, 5], [-3, 7], np.s_[4::-3, 0:5:7]),
        ([9, -9], [10, 9], None, np.s_[9:10, -9:9]),  # empty along the first axis
    ],
)
def test_strided_slice(begin, end, strides, numpy_index):
    a = te.placeholder((5, 7, 3), name="a")
    check_operator([a], strided_slice(a, begin, end, strides), lambda x: x[numpy_index])


def test_strided_slice_with_axes_and_size_mode():
    a = te.placeholder((4, 6, 5), name="a")
    check_operator(
        [a],
        strided_slice(a, [-1, 1], [0, 2], [-1, 2], axes=[-1, 0]),
        lambda x: x[1:2:2, :, -1:0:-1],
    )
    sized = strided_slice(a, [1, -4], [2, -1], axes=[1, 2], slice_mode="size")
    check_operator([a], sized, lambda x: x[:, 1:3, -4:])


def test_strided_slice_rejects_bad_arguments():
    a = te.placeholder((4, 6), name="a")
    with pytest.raises(OperatorError, match="strided_slice: argument `strides`: .* zero step"):
        strided_slice(a, [0], [2], [0])
    with pytest.raises(OperatorError, match="strided_slice: argument `begin`: has 3 entries"):
        strided_slice(a, [0, 0, 0], [1, 1, 1])
    with pytest.raises(OperatorError, match="strided_slice: argument `axes`"):
        strided_slice(a, [0, 0], [1, 1], axes=[1, 1])
    with pytest.raises(OperatorError, match="strided_slice: argument `slice_mode`"):
        strided_slice(a, [0], [1], slice_mode="stop")


@pytest.mark.parametrize("shape", [(3, 2, 5), (7,)])
def test_flatten(shape):
    a = te.placeholder(shape, name="a")
    check_operator([a], flatten(a), lambda x: x.reshape(shape[0], -1))


def test_flatten_rejects_scalar():
    with pytest.raises(OperatorError, match="flatten: argument `data`"):
        flatten(te.placeholder((), name="a"))
