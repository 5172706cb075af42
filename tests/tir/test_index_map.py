"""IndexMap: building from lambdas, shapes, inverses and padding, checked by enumeration."""

import itertools
import math
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith import Analyzer
from tessel.ir import builders, structural_equal
from tessel.ir import expr as E  # noqa: N812
from tessel.ir.expr import IntImm, Range, SizeVar, Var
from tessel.script import tir as T  # noqa: N812 (TVMScript spelling)
from tessel.tir import IndexMap, IndexMapError

SETTINGS = settings(derandomize=True, max_examples=25, deadline=None, database=None)
_OPERATORS = {
    E.Add: operator.add,
    E.Sub: operator.sub,
    E.Mul: operator.mul,
    E.FloorDiv: operator.floordiv,
    E.FloorMod: operator.mod,
    E.Min: min,
    E.Max: max,
    E.EQ: operator.eq,
    E.NE: operator.ne,
    E.LT: operator.lt,
    E.LE: operator.le,
    E.GT: operator.gt,
    E.GE: operator.ge,
    E.And: lambda x, y: x and y,
    E.Or: lambda x, y: x or y,
}


def evaluate(expr, env):
    """The exact value of an integer or bool index expression, Vars bound by `env`."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, E.Not):
        return not evaluate(expr.a, env)
    if isinstance(expr, E.Select):
        taken = evaluate(expr.condition, env)
        return evaluate(expr.true_value if taken else expr.false_value, env)
    return _OPERATORS[type(expr)](evaluate(expr.a, env), evaluate(expr.b, env))


def apply(imap, point):
    """The final indices of `imap` at `point`, as ints."""
    env = dict(zip(imap.initial_indices, point, strict=True))
    return tuple(evaluate(e, env) for e in imap.final_indices)


def box(shape):
    return itertools.product(*(range(int(e)) for e in shape))


def ints(shape):
    return tuple(int(e) for e in shape)


def check_bijection(imap, shape):
    """`imap` and its inverse undo each other on every point of both boxes."""
    inverse = imap.inverse(shape)
    new_shape = imap.map_shape(shape)
    assert math.prod(ints(new_shape)) == math.prod(ints(shape))
    for point in box(shape):
        assert apply(inverse, apply(imap, point)) == point
    for point in box(new_shape):
        assert apply(imap, apply(inverse, point)) == point


def check_padding(imap, shape):
    """The inverse undoes `imap` on its image, and the predicate holds exactly off the image."""
    inverse, predicate = imap.non_surjective_inverse(shape)
    image = {apply(imap, point) for point in box(shape)}
    for point in box(shape):
        assert apply(inverse, apply(imap, point)) == point
    for point in box(imap.map_shape(shape)):
        env = dict(zip(inverse.initial_indices, point, strict=True))
        assert bool(evaluate(predicate, env)) == (point not in image), point


# ---------------------------------------------------------------- from_func


def test_from_func_names_variables_after_the_lambda_parameters():
    imap = IndexMap.from_func(lambda i, j: (j, i // 4, i % 4))
    i, j = imap.initial_indices
    assert (i.name, j.name) == ("i", "j")
    assert imap.final_indices[0] is j
    assert imap.axis_separators == ()
    assert apply(imap, (9, 2)) == (2, 2, 1)


def test_from_func_with_star_args_needs_ndim_and_names_variables_i0_i1():
    imap = IndexMap.from_func(lambda *idx: (idx[1], idx[0]), ndim=2)
    assert [v.name for v in imap.initial_indices] == ["i0", "i1"]
    assert apply(imap, (3, 5)) == (5, 3)
    with pytest.raises(IndexMapError, match="ndim") as err:
        IndexMap.from_func(lambda *idx: idx)
    assert err.value.rule == "index_map.ndim-needed"


def test_from_func_rejects_an_ndim_that_does_not_match_the_parameters():
    assert len(IndexMap.from_func(lambda i, j: (j, i), ndim=2).initial_indices) == 2
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i, j: (i, j), ndim=3)
    assert err.value.rule == "index_map.arity"


def test_from_func_turns_axis_separator_markers_into_positions():
    imap = IndexMap.from_func(lambda i, j, k: (i, IndexMap.AXIS_SEPARATOR, j, k))
    assert len(imap.final_indices) == 3
    assert imap.axis_separators == (1,)


def test_from_func_accepts_a_single_expression_and_python_ints():
    single = IndexMap.from_func(lambda i: i * 2 + 1)
    assert apply(single, (3,)) == (7,)
    constants = IndexMap.from_func(lambda i, j: [0, j, i], index_dtype="int64")
    assert isinstance(constants.final_indices[0], IntImm)
    assert {str(e.dtype) for e in constants.final_indices} == {"int64"}
    assert apply(constants, (1, 2)) == (0, 2, 1)


def test_from_func_rejects_a_result_that_is_not_an_expression():
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i: ("i",))
    assert err.value.rule == "index_map.index-type"


@pytest.mark.parametrize("separators", [(0,), (2,), (1, 1)])
def test_axis_separators_must_lie_between_indices_in_order(separators):
    i, j = Var("i"), Var("j")
    with pytest.raises(IndexMapError) as err:
        IndexMap((i, j), (i, j), separators)
    assert err.value.rule == "index_map.axis-separators"


def test_identity_maps_every_index_to_itself():
    imap = IndexMap.identity(2)
    assert imap.final_indices == imap.initial_indices
    assert ints(imap.map_shape((3, 2))) == (3, 2)
    check_bijection(imap, (3, 2))


# ---------------------------------------------------------------- map_indices, map_shape


def test_map_indices_substitutes_and_simplifies_with_an_analyzer():
    imap = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    x = Var("x")
    raw = imap.map_indices((x * 4 + 1, 7))
    assert apply(IndexMap((x,), raw), (5,)) == (5, 7, 1)
    analyzer = Analyzer()
    analyzer.bind(x, Range.from_min_extent(0, 8))
    simple = imap.map_indices((x * 4 + 1, 7), analyzer)
    assert simple[0] is x
    assert [e.value for e in simple[1:]] == [7, 1]


def test_map_indices_rejects_the_wrong_number_of_indices():
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i, j: (j, i)).map_indices((1,))
    assert err.value.rule == "index_map.arity"


def test_map_shape_pads_a_floordiv_mod_join_to_the_next_multiple_as_tvm_does():
    imap = IndexMap.from_func(lambda i: (i // 32) * 32 + i % 32)  # RFC 77
    assert ints(imap.map_shape((127,))) == (128,)


@pytest.mark.parametrize(
    ("func", "shape", "expected"),
    [
        (lambda i, j: (j, i), (3, 5), (5, 3)),
        (lambda i: (i // 4, i % 4), (14,), (4, 4)),
        (lambda i, j: (i * 5 + j,), (3, 5), (15,)),
        (lambda i: (i + 3,), (5,), (8,)),
    ],
    ids=["transpose", "split", "fuse", "offset"],
)
def test_map_shape_is_one_past_each_largest_index(func, shape, expected):
    assert ints(IndexMap.from_func(func).map_shape(shape)) == expected


def test_map_shape_has_the_dtype_of_the_shape():
    imap = IndexMap.from_func(lambda i: (i // 4, i % 4))
    new_shape = imap.map_shape((builders.const(14, "int64"),))
    assert [(e.value, str(e.dtype)) for e in new_shape] == [(4, "int64"), (4, "int64")]


def test_map_shape_of_a_symbolic_extent_rounds_it_up():
    n = SizeVar("n")
    outer, inner = IndexMap.from_func(lambda i: (i // 4, i % 4)).map_shape((n,))
    assert inner.value == 4
    for value in range(1, 20):
        assert evaluate(outer, {n: value}) == -(-value // 4)


def test_map_shape_rejects_an_index_that_can_be_negative():
    with pytest.raises(IndexMapError, match="negative") as err:
        IndexMap.from_func(lambda i: (i - 1,)).map_shape((4,))
    assert err.value.rule == "index_map.negative-index"


# ---------------------------------------------------------------- inverse


@pytest.mark.parametrize(
    ("func", "shape"),
    [
        (lambda i, j: (j, i), (3, 5)),
        (lambda i: (i // 4, i % 4), (16,)),
        (lambda i, j: (i * 5 + j,), (3, 5)),
        (lambda i, j, k: (k, (i * 3 + j) // 2, (i * 3 + j) % 2), (2, 3, 2)),
        (lambda i: (i // 32) * 32 + i % 32, (64,)),
    ],
    ids=["transpose", "split", "fuse", "fuse-split-transpose", "join"],
)
def test_inverse_of_a_bijection_undoes_it_on_both_boxes(func, shape):
    check_bijection(IndexMap.from_func(func), shape)


def test_inverse_rejects_a_map_that_pads():
    imap = IndexMap.from_func(lambda i: (i // 4, i % 4))
    with pytest.raises(IndexMapError, match=r"lambda i: \(i // 4, i % 4\)") as err:
        imap.inverse((14,))
    assert err.value.rule == "index_map.not-bijective"


def test_inverse_rejects_a_map_that_drops_an_index():
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i, j: (i,)).inverse((4, 4))
    assert err.value.rule == "index_map.not-bijective"


def test_is_injective_tells_a_split_from_a_sum():
    assert IndexMap.from_func(lambda i, j: (i * 3 + j,)).is_injective((4, 3))
    assert not IndexMap.from_func(lambda i, j: (i + j,)).is_injective((4, 3))


# ---------------------------------------------------------------- non_surjective_inverse


def test_non_surjective_inverse_of_a_padded_split():
    imap = IndexMap.from_func(lambda i: (i // 4, i % 4))
    inverse, predicate = imap.non_surjective_inverse((14,))
    a, b = inverse.initial_indices
    for point in box((4, 4)):
        env = {a: point[0], b: point[1]}
        assert apply(inverse, point) == (point[0] * 4 + point[1],)
        assert bool(evaluate(predicate, env)) == (point[0] * 4 + point[1] >= 14)


def test_non_surjective_inverse_names_its_indices_ax_and_simplifies_them():
    inverse, _ = IndexMap.from_func(lambda i: (i // 4, i % 4)).non_surjective_inverse((14,))
    assert [v.name for v in inverse.initial_indices] == ["ax0", "ax1"]
    a, b = inverse.initial_indices
    assert structural_equal(inverse.final_indices[0], a * 4 + b)


def test_non_surjective_inverse_of_a_surjective_map_has_a_false_predicate():
    imap = IndexMap.from_func(lambda i, j: (j, i // 4, i % 4))
    _, predicate = imap.non_surjective_inverse((8, 3))
    assert builders.is_const_int(predicate, 0)


def test_non_surjective_inverse_of_the_seed_packed_weight_layout():
    imap = IndexMap.from_func(lambda o, i, h, w: (o // 4, i // 4, o % 4, i % 4, h, w))  # TY-NNP
    assert ints(imap.map_shape((32, 3, 7, 7))) == (8, 1, 4, 4, 7, 7)
    check_padding(imap, (32, 3, 7, 7))


def test_non_surjective_inverse_of_the_seed_pads_row_and_column_127():
    imap = IndexMap.from_func(lambda i, k: ((i // 32) * 32 + i % 32, (k // 32) * 32 + k % 32))
    assert ints(imap.map_shape((127, 127))) == (128, 128)
    inverse, predicate = imap.non_surjective_inverse((127, 127))
    i, k = inverse.initial_indices
    for point in [(0, 0), (126, 126), (127, 0), (5, 127), (127, 127)]:
        assert apply(inverse, point) == point
        expected = point[0] >= 127 or point[1] >= 127
        assert bool(evaluate(predicate, {i: point[0], k: point[1]})) == expected


@pytest.mark.parametrize(
    ("func", "shape"),
    [
        (lambda i: (i // 4, i % 4), (14,)),
        (lambda i, j: (j // 3, i, j % 3), (2, 7)),
        (lambda i, j: ((i * 5 + j) // 4, (i * 5 + j) % 4), (3, 5)),
        (lambda i: (i + 3,), (5,)),
        (lambda i, j: (i, j), (3, 4)),
    ],
    ids=["split", "split-transpose", "fuse-then-split", "offset", "surjective"],
)
def test_padding_predicate_holds_exactly_on_unmapped_elements(func, shape):
    check_padding(IndexMap.from_func(func), shape)


def test_non_surjective_inverse_with_a_symbolic_extent():
    n = SizeVar("n")
    imap = IndexMap.from_func(lambda i: (i // 4, i % 4))
    inverse, predicate = imap.non_surjective_inverse((n,))
    a, b = inverse.initial_indices
    for extent in (5, 8, 13):
        for point in box((-(-extent // 4), 4)):
            env = {n: extent, a: point[0], b: point[1]}
            assert bool(evaluate(predicate, env)) == (point[0] * 4 + point[1] >= extent)


def test_non_surjective_inverse_rejects_a_strided_map_it_cannot_invert():
    imap = IndexMap.from_func(lambda i: (i * 2,))
    assert imap.is_injective((4,))
    with pytest.raises(IndexMapError, match="cannot invert") as err:
        imap.non_surjective_inverse((4,))
    assert err.value.rule == "index_map.not-invertible"


def test_non_surjective_inverse_rejects_a_map_that_is_not_injective():
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i, j: (i // 2, j)).non_surjective_inverse((4, 4))
    assert err.value.rule == "index_map.not-injective"


# ---------------------------------------------------------------- random layouts


@st.composite
def layouts(draw, pad):
    """A random composition of splits, fuses and transposes, and the shape it starts from; with
    `pad`, it starts with a split that pads (padding inside the digits of an earlier split,
    `i % 3 // 2`, is beyond the inverse: it raises index_map.not-invertible)."""
    shape = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    current = list(shape)
    imap = IndexMap.identity(len(shape))
    if pad:
        axis = draw(st.integers(0, len(shape) - 1))
        imap, current = _split(current, axis, draw(st.integers(2, 4)))
    for _ in range(draw(st.integers(1, 3))):
        step, current = draw(_steps(current))
        imap = imap.then(step)
    return imap, tuple(shape)


def _steps(current):
    ndim = len(current)
    axis = st.integers(0, ndim - 1)
    splits = axis.flatmap(lambda a: st.tuples(st.just(a), _divisors(current[a])))
    choices = [
        splits.map(lambda af: _split(current, *af)),
        st.permutations(range(ndim)).map(lambda order: _transpose(current, order)),
    ]
    if ndim > 1:
        choices.append(st.integers(0, ndim - 2).map(lambda a: _fuse(current, a)))
    return st.one_of(choices)


def _divisors(extent):
    return st.sampled_from([f for f in range(1, extent + 1) if extent % f == 0])


def _split(current, axis, factor):
    step = IndexMap.from_func(
        lambda *x: (*x[:axis], x[axis] // factor, x[axis] % factor, *x[axis + 1 :]),
        ndim=len(current),
    )
    return step, [*current[:axis], -(-current[axis] // factor), factor, *current[axis + 1 :]]


def _fuse(current, axis):
    inner = current[axis + 1]
    step = IndexMap.from_func(
        lambda *x: (*x[:axis], x[axis] * inner + x[axis + 1], *x[axis + 2 :]), ndim=len(current)
    )
    return step, [*current[:axis], current[axis] * inner, *current[axis + 2 :]]


def _transpose(current, order):
    step = IndexMap.from_func(lambda *x: tuple(x[k] for k in order), ndim=len(current))
    return step, [current[k] for k in order]


@SETTINGS
@given(layouts(pad=False))
def test_random_bijective_layouts_invert_exactly(layout):
    check_bijection(*layout)


@SETTINGS
@given(layouts(pad=True))
def test_random_padded_layouts_have_exact_padding_predicates(layout):
    check_padding(*layout)


# ---------------------------------------------------------------- composition


def test_then_applies_self_first_and_keeps_the_other_maps_separators():
    first = IndexMap.from_func(lambda i, j: (j, i))
    second = IndexMap.from_func(lambda a, b: (a // 2, IndexMap.AXIS_SEPARATOR, a % 2, b))
    composed = first.then(second)
    assert composed.axis_separators == (1,)
    for point in box((3, 4)):
        assert apply(composed, point) == apply(second, apply(first, point))


def test_then_keeps_the_padding_of_each_step():
    split = IndexMap.from_func(lambda i: (i // 4, i % 4))
    join = IndexMap.from_func(lambda a, b: (a * 4 + b,))
    assert ints(split.then(join).map_shape((14,))) == (16,)


def test_then_rejects_maps_of_mismatched_arity():
    with pytest.raises(IndexMapError) as err:
        IndexMap.from_func(lambda i: (i, i)).then(IndexMap.from_func(lambda a: (a,)))
    assert err.value.rule == "index_map.arity"


# ---------------------------------------------------------------- printing and equality


@pytest.mark.parametrize(
    ("imap", "text"),
    [
        (
            IndexMap.from_func(lambda i, j: (i // 4, j, i % 4)),
            "IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))",
        ),
        (
            IndexMap.from_func(lambda i, j: (i, IndexMap.AXIS_SEPARATOR, j)),
            "IndexMap.from_func(lambda i, j: (i, IndexMap.AXIS_SEPARATOR, j))",
        ),
        (IndexMap.from_func(lambda i: i * 2 + 1), "IndexMap.from_func(lambda i: (i * 2 + 1,))"),
    ],
)
def test_repr_is_the_from_func_call_that_builds_the_map(imap, text):
    assert repr(imap) == text
    assert str(imap) == text


def _renamed_map(*names):
    """A map over variables named `names` (duplicates, keywords, `T`), reversing and scaling."""
    variables = tuple(Var(name) for name in names)
    return IndexMap(variables, tuple(v * (k + 1) for k, v in enumerate(reversed(variables))))


@pytest.mark.parametrize(
    "imap",
    [
        IndexMap.from_func(lambda i, j: (j, IndexMap.AXIS_SEPARATOR, i // 4, i % 4)),
        IndexMap.from_func(lambda i: (i // 4, i % 4), index_dtype="int64"),
        IndexMap.from_func(lambda i, j: (T.min(i, j), T.max(i, j) * 2)),
        _renamed_map("i", "i"),
        _renamed_map("lambda", "T", "2d", "i0"),
    ],
    ids=["separators", "int64", "min-max", "duplicate-names", "reserved-names"],
)
def test_repr_round_trips_through_eval(imap):
    again = eval(repr(imap), {"IndexMap": IndexMap, "T": T})
    assert again.axis_separators == imap.axis_separators
    assert [v.dtype for v in again.initial_indices] == [v.dtype for v in imap.initial_indices]
    for point in box((5,) * len(imap.initial_indices)):
        assert apply(again, point) == apply(imap, point)


def test_two_from_func_results_of_one_lambda_are_structurally_equal():
    a = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    b = IndexMap.from_func(lambda x, y: (x // 4, y, x % 4))
    assert structural_equal(a, b)
    assert not structural_equal(a, IndexMap.from_func(lambda i, j: (j // 4, i, j % 4)))
    separated = IndexMap.from_func(lambda i, j: (i // 4, IndexMap.AXIS_SEPARATOR, j, i % 4))
    assert not structural_equal(a, separated)
