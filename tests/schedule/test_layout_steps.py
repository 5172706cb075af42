"""Graph-level layout steps (TY-NNP thread): the pad / reshape / transpose steps of buffer
primitives and of general index maps (or a gather), each checked against evaluating the map one
element at a time and by the forward-then-reverse round trip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.ir.expr import PrimExpr
from tessel.schedule.layout_steps import (
    Gather,
    LayoutRecord,
    Pad,
    Reshape,
    Slice,
    Transpose,
    fuse_steps,
    reorder_steps,
    split_steps,
    steps_for_index_map,
)
from tessel.testing.arith_strategies import evaluate
from tessel.tir.index_map import IndexMap

SETTINGS = settings(derandomize=True, max_examples=25, deadline=None, database=None)


def _by_evaluation(index_map: IndexMap, x: np.ndarray, new_shape: tuple[int, ...]) -> np.ndarray:
    """`out[map(p)] = x[p]` for every old point p, zero elsewhere, one point at a time."""
    out = np.zeros(new_shape, dtype=x.dtype)
    for point in np.ndindex(x.shape):
        env = dict(zip(index_map.initial_indices, point, strict=True))
        out[tuple(evaluate(e, env) for e in index_map.final_indices)] = x[point]
    return out


def _nonzero_int8(shape: tuple[int, ...]) -> np.ndarray:
    """Random int8 data with no zero, so that padding (zero) cannot pass for data."""
    return np.random.default_rng(0).integers(1, 128, shape, dtype=np.int8)


def _check_steps_realise_the_map(record: LayoutRecord, index_map: IndexMap) -> None:
    x = _nonzero_int8(record.original_shape)
    forward = record.forward(x)
    np.testing.assert_array_equal(forward, _by_evaluation(index_map, x, record.new_shape))
    np.testing.assert_array_equal(record.reverse(forward), x)


# ---- TY-NNP's conv2d weight: split o, split i, reorder (the TY-NNP thread) ----------------

SEED_WEIGHT_MAP = IndexMap.from_func(lambda o, i, h, w: (o // 4, i // 4, o % 4, i % 4, h, w))


def _seed_weight_record() -> LayoutRecord:
    record = LayoutRecord("weight", (32, 3, 7, 7))
    record = record.then(split_steps(record.new_shape, 0, [None, 4], 0))  # [8, 4, 3, 7, 7]
    record = record.then(split_steps(record.new_shape, 2, [None, 4], 0))  # [8, 4, 1, 4, 7, 7]
    return record.then(reorder_steps(record.new_shape, [0, 2, 1, 3, 4, 5]))  # [8, 1, 4, 4, 7, 7]


def test_seed_weight_steps_are_one_reshape_pad_or_transpose_each_and_reverse_as_in_the_seed():
    record = _seed_weight_record()
    assert record.new_shape == (8, 1, 4, 4, 7, 7)
    assert record.steps == (
        Reshape((8, 4, 3, 7, 7)),
        Pad(((0, 0), (0, 0), (0, 1), (0, 0), (0, 0)), 0),
        Reshape((8, 4, 1, 4, 7, 7)),
        Transpose((0, 2, 1, 3, 4, 5)),
    )
    assert record.reverse_steps() == (
        Transpose((0, 2, 1, 3, 4, 5)),
        Reshape((8, 4, 4, 7, 7)),
        Slice((0, 0, 0, 0, 0), (8, 4, 3, 7, 7)),
        Reshape((32, 3, 7, 7)),
    )


def test_seed_weight_forward_is_the_composed_map_and_reverse_restores_the_weight():
    _check_steps_realise_the_map(_seed_weight_record(), SEED_WEIGHT_MAP)


def test_record_prints_the_forward_and_reverse_chains_one_step_per_line():
    assert str(_seed_weight_record()) == (
        "weight: [32, 3, 7, 7] -> [8, 1, 4, 4, 7, 7]\n"
        "  forward:\n"
        "    reshape(x, [8, 4, 3, 7, 7])\n"
        "    pad(x, [[0, 0], [0, 0], [0, 1], [0, 0], [0, 0]], value=0)\n"
        "    reshape(x, [8, 4, 1, 4, 7, 7])\n"
        "    transpose(x, [0, 2, 1, 3, 4, 5])\n"
        "  reverse:\n"
        "    transpose(x, [0, 2, 1, 3, 4, 5])\n"
        "    reshape(x, [8, 4, 4, 7, 7])\n"
        "    strided_slice(x, begin=[0, 0, 0, 0, 0], end=[8, 4, 3, 7, 7])\n"
        "    reshape(x, [32, 3, 7, 7])"
    )


# ---- the steps of each buffer primitive -----------------------------------------------------


def test_split_pads_the_axis_up_to_the_factors_product_before_reshaping():
    assert split_steps((8, 4, 3, 7, 7), 2, [None, 4], 0) == (
        Pad(((0, 0), (0, 0), (0, 1), (0, 0), (0, 0)), 0),
        Reshape((8, 4, 1, 4, 7, 7)),
    )


def test_split_that_divides_is_one_reshape_with_the_none_factor_inferred():
    assert split_steps((32, 3), 0, [4, None], 0) == (Reshape((4, 8, 3)),)


@pytest.mark.parametrize("factors", [[None, None], [0, 4], [2, 2]], ids=str)
def test_split_refuses_factors_that_do_not_cover_the_axis(factors):
    with pytest.raises(ValueError, match="factors"):
        split_steps((8,), 0, factors, 0)


def test_fuse_of_consecutive_axes_is_one_reshape():
    assert fuse_steps((2, 3, 4), [1, 2]) == (Reshape((2, 12)),)


def test_fuse_of_non_consecutive_axes_is_refused():
    with pytest.raises(ValueError, match="consecutive"):
        fuse_steps((2, 3, 4), [0, 2])


def test_reorder_refuses_an_order_that_is_no_permutation():
    with pytest.raises(ValueError, match="not a permutation"):
        reorder_steps((2, 3), [0, 0])


def test_record_refuses_a_step_that_does_not_fit_the_shape_before_it():
    with pytest.raises(ValueError, match="sizes differ"):
        LayoutRecord("w", (4, 3), (Reshape((5, 2)),))


def test_record_refuses_an_argument_of_the_wrong_shape():
    with pytest.raises(ValueError, match="`w` has shape"):
        LayoutRecord("w", (4, 3)).forward(np.zeros((3, 4)))


def test_slice_has_no_reverse_step():
    with pytest.raises(ValueError, match="drops elements"):
        LayoutRecord("w", (4,), (Slice((0,), (2,)),)).reverse_steps()


# ---- general index maps -----------------------------------------------------------------------

INDEX_MAPS = {  # name: (map, old shape, the steps expected)
    "identity": (lambda i, j: (i, j), (3, 5), ()),
    "transpose": (lambda i, j: (j, i), (3, 5), (Transpose((1, 0)),)),
    "nchw-to-nchw4c": (
        lambda n, c, h, w: (n, c // 4, h, w, c % 4),
        (2, 8, 3, 3),
        (Reshape((2, 2, 4, 3, 3)), Transpose((0, 1, 3, 4, 2))),
    ),
    "padded-split": (lambda i: (i // 4, i % 4), (14,), (Pad(((0, 2),), 0), Reshape((4, 4)))),
    "seed-127-to-128": (
        lambda i, k: ((i // 32) * 32 + i % 32, (k // 32) * 32 + k % 32),
        (127, 127),
        (Pad(((0, 1), (0, 1)), 0),),
    ),
    "seed-weight": (
        SEED_WEIGHT_MAP.final_indices,  # i // 4 is 0 and i % 4 is i: a reshape, then the padding
        (32, 3, 7, 7),
        (Reshape((8, 1, 4, 3, 7, 7)), Pad(((0, 0),) * 3 + ((0, 1),) + ((0, 0),) * 2, 0)),
    ),
    "fuse": (lambda i, j: (i * 5 + j,), (3, 5), (Reshape((15,)),)),
    "split-of-fuse-across-axes": (
        lambda i, j: ((i * 6 + j) // 4, (i * 6 + j) % 4),
        (2, 6),
        (Reshape((3, 4)),),
    ),
    "fuse-transposed": (lambda i, j: (j * 3 + i,), (3, 4), (Transpose((1, 0)), Reshape((12,)))),
    "offset": (lambda i: (i + 2,), (4,), (Pad(((2, 0),), 0),)),
    "three-digits": (
        lambda i, j: (i // 2 % 3, i // 6, j, i % 2),
        (12, 5),
        (Reshape((2, 3, 2, 5)), Transpose((1, 0, 3, 2))),
    ),
}
GATHER_MAPS = {  # name: (map, old shape): no sequence of pad / reshape / transpose
    "sum-of-indices": (lambda i, j: (j, (i + j) % 4), (4, 4)),
    "reversed": (lambda i: (7 - i,), (8,)),
    "split-of-padded-fuse": (lambda i, j: ((i * 3 + j) // 4, (i * 3 + j) % 4), (3, 3)),
}


def _index_map(func_or_exprs) -> IndexMap:
    if callable(func_or_exprs):
        return IndexMap.from_func(func_or_exprs)
    return IndexMap(SEED_WEIGHT_MAP.initial_indices, func_or_exprs)


def _record(index_map: IndexMap, shape: tuple[int, ...]) -> LayoutRecord:
    steps = steps_for_index_map(index_map.initial_indices, index_map.final_indices, shape, 0)
    return LayoutRecord("x", shape, steps)


@pytest.mark.parametrize(("func", "shape", "expected"), INDEX_MAPS.values(), ids=INDEX_MAPS)
def test_index_map_decomposes_into_pad_reshape_transpose(func, shape, expected):
    index_map = _index_map(func)
    record = _record(index_map, shape)
    assert record.steps == expected
    assert record.new_shape == tuple(int(e) for e in index_map.map_shape(shape))


@pytest.mark.parametrize(("func", "shape"), GATHER_MAPS.values(), ids=GATHER_MAPS)
def test_index_map_that_is_no_step_sequence_becomes_one_gather(func, shape):
    record = _record(_index_map(func), shape)
    assert [type(step) for step in record.steps] == [Gather]


ALL_MAPS = {name: case[:2] for name, case in (INDEX_MAPS | GATHER_MAPS).items()}


@pytest.mark.parametrize(("func", "shape"), ALL_MAPS.values(), ids=ALL_MAPS)
def test_index_map_steps_equal_evaluating_the_map_and_reverse_restores_the_input(func, shape):
    index_map = _index_map(func)
    _check_steps_realise_the_map(_record(index_map, shape), index_map)


def test_index_map_steps_pad_out_to_a_given_larger_new_shape():
    index_map = IndexMap.from_func(lambda i, j: (j, i))
    steps = steps_for_index_map(
        index_map.initial_indices, index_map.final_indices, (3, 2), 0, (4, 3)
    )
    record = LayoutRecord("x", (3, 2), steps)
    assert record.steps == (Transpose((1, 0)), Pad(((0, 2), (0, 0)), 0))
    _check_steps_realise_the_map(record, index_map)


def test_gather_prints_its_table_shape():
    (step,) = _record(_index_map(GATHER_MAPS["reversed"][0]), (8,)).steps
    assert str(step) == "gather(x, table of shape [8], value=0)"


def test_index_map_that_sends_two_elements_to_one_place_is_refused():
    index_map = IndexMap.from_func(lambda i: (i // 2,))
    with pytest.raises(ValueError, match="to one place"):
        _record(index_map, (4,))


# ---- random buffer primitive sequences: the steps are the composed map -------------------


def _split(draw, record: LayoutRecord, exprs: list[PrimExpr]):
    axis = draw(st.integers(0, len(exprs) - 1))
    inner = draw(st.integers(1, 4))
    index = exprs[axis]
    steps = split_steps(record.new_shape, axis, [None, inner], 0)
    return record.then(steps), [*exprs[:axis], index // inner, index % inner, *exprs[axis + 1 :]]


def _fuse(draw, record: LayoutRecord, exprs: list[PrimExpr]):
    if len(exprs) < 2:
        return record, exprs
    axis = draw(st.integers(0, len(exprs) - 2))
    fused = exprs[axis] * record.new_shape[axis + 1] + exprs[axis + 1]
    steps = fuse_steps(record.new_shape, [axis, axis + 1])
    return record.then(steps), [*exprs[:axis], fused, *exprs[axis + 2 :]]


def _reorder(draw, record: LayoutRecord, exprs: list[PrimExpr]):
    order = draw(st.permutations(range(len(exprs))))
    return record.then(reorder_steps(record.new_shape, order)), [exprs[k] for k in order]


@st.composite
def buffer_primitive_sequences(draw) -> tuple[LayoutRecord, IndexMap]:
    """A record of random buffer_split / buffer_fuse / buffer_reorder steps, and their map."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    identity = IndexMap.identity(len(shape))
    record, exprs = LayoutRecord("x", shape), list(identity.initial_indices)
    for primitive in draw(st.lists(st.sampled_from([_split, _fuse, _reorder]), max_size=4)):
        record, exprs = primitive(draw, record, exprs)
    return record, IndexMap(identity.initial_indices, tuple(exprs))


@SETTINGS
@given(buffer_primitive_sequences())
def test_buffer_primitive_steps_equal_their_composed_map_and_reverse(case):
    record, index_map = case
    _check_steps_realise_the_map(record, index_map)


@SETTINGS
@given(buffer_primitive_sequences())
def test_composed_map_decomposes_into_steps_that_equal_evaluating_it(case):
    record, index_map = case  # into the map's own map_shape, which may be tighter than the record's
    _check_steps_realise_the_map(_record(index_map, record.original_shape), index_map)
