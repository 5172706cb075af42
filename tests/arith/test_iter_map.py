"""Iterator-map detection: recognised splits and fuses, checked by enumerating small domains.

Every bijective map in BIJECTIVE_MAPS is detected, normalised back to an equal expression,
shown one-to-one onto the box of its index extents, and inverted (inverse(map(p)) == p).
"""

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map import (
    IterMapError,
    IterSumExpr,
    detect_iter_map,
    inverse_iter_map,
    normalize_iter_map_to_expr,
)
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, SizeVar, Var
from tessel.testing.arith_strategies import evaluate


@dataclass(frozen=True)
class IterMapCase:
    """Loop ranges by name (extent, or (min, extent)), the indices, and an optional predicate."""

    name: str
    ranges: dict[str, int | tuple[int, int]]
    indices: Callable[..., list]
    predicate: Callable[..., PrimExpr] | None = None

    def build(self) -> tuple[dict[Var, Range], list[PrimExpr], PrimExpr]:
        iters = {Var(name): _range(spec) for name, spec in self.ranges.items()}
        variables = list(iters)
        indices = [builders.convert(index) for index in self.indices(*variables)]
        predicate = self.predicate(*variables) if self.predicate else builders.const(True)
        return iters, indices, predicate

    def __str__(self) -> str:
        return self.name


def _range(spec: int | tuple[int, int]) -> Range:
    low, extent = spec if isinstance(spec, tuple) else (0, spec)
    return Range.from_min_extent(low, extent)


BIJECTIVE_MAPS = [
    IterMapCase("identity", {"i": 4, "j": 3}, lambda i, j: [i, j]),
    IterMapCase("transpose", {"i": 4, "j": 3}, lambda i, j: [j, i]),
    IterMapCase("split", {"i": 8}, lambda i: [i // 4, i % 4]),
    IterMapCase("split-three-ways", {"i": 16}, lambda i: [i // 8, i // 2 % 4, i % 2]),
    IterMapCase("split-transposed", {"i": 8}, lambda i: [i % 4, i // 4]),
    IterMapCase("fuse", {"i": 4, "j": 8}, lambda i, j: [i * 8 + j]),
    IterMapCase("fuse-three", {"i": 2, "j": 3, "k": 4}, lambda i, j, k: [i * 12 + j * 4 + k]),
    IterMapCase("fuse-reordered", {"i": 4, "j": 8}, lambda i, j: [j + i * 8]),
    IterMapCase("fuse-transposed", {"i": 4, "j": 8}, lambda i, j: [j * 4 + i]),
    IterMapCase(
        "split-of-fuse", {"i": 4, "j": 8}, lambda i, j: [(i * 8 + j) // 4, (i * 8 + j) % 4]
    ),
    IterMapCase(
        "split-of-fuse-across-loops",
        {"i": 2, "j": 6},
        lambda i, j: [(i * 6 + j) // 4, (i * 6 + j) % 4],
    ),
    IterMapCase("fuse-of-split-digits", {"i": 8}, lambda i: [i % 4 * 2 + i // 4]),
    IterMapCase("recombined-digits", {"i": 8, "j": 2}, lambda i, j: [i // 4 * 4 + i % 4, j]),
    IterMapCase("fuse-with-split", {"i": 8, "j": 3}, lambda i, j: [i // 4, i % 4 * 3 + j]),
    IterMapCase("offsets", {"i": 4, "j": 3}, lambda i, j: [i + 3, j - 1]),
    IterMapCase("fuse-with-offset", {"i": 4, "j": 8}, lambda i, j: [i * 8 + j + 5]),
    IterMapCase("nonzero-min", {"i": (2, 6)}, lambda i: [i]),
    IterMapCase("nonzero-min-split", {"i": (2, 6)}, lambda i: [(i - 2) // 3, (i - 2) % 3]),
    IterMapCase("nonzero-min-fuse", {"i": (1, 3), "j": (-2, 4)}, lambda i, j: [i * 4 + j]),
    IterMapCase("unit-extent", {"i": 4, "j": 1}, lambda i, j: [i, j]),
    IterMapCase("unit-extent-in-fuse", {"i": 4, "u": 1, "j": 3}, lambda i, u, j: [i * 3 + u + j]),
    IterMapCase("constant-index", {"i": 4}, lambda i: [0, i, 7]),
    IterMapCase("reversed", {"i": 8}, lambda i: [7 - i]),
    IterMapCase(
        "predicate-on-fuse", {"i": 4, "j": 4}, lambda i, j: [i * 4 + j], lambda i, j: i * 4 + j < 14
    ),
    IterMapCase(
        "predicate-split-of-fuse",
        {"i": 4, "j": 4},
        lambda i, j: [(i * 4 + j) // 2, (i * 4 + j) % 2],
        lambda i, j: i * 4 + j < 14,
    ),
    IterMapCase(
        "predicate-both-bounds",
        {"i": 4, "j": 4},
        lambda i, j: [i * 4 + j],
        lambda i, j: builders.logical_and(i * 4 + j >= 2, i * 4 + j < 14),
    ),
    IterMapCase(
        "predicate-iterators-on-both-sides",
        {"i": 4, "j": 4},
        lambda i, j: [i * 4 + j],
        lambda i, j: i * 4 < 14 - j,
    ),
    IterMapCase(
        "predicate-inner-fuse",
        {"i": 3, "j": 3, "k": 4},
        lambda i, j, k: [i * 10 + j * 4 + k],
        lambda i, j, k: j * 4 + k < 10,
    ),
    IterMapCase(
        "predicate-one-iterator", {"i": 8, "j": 2}, lambda i, j: [j, i], lambda i, j: i < 5
    ),
]


def _domain(iters: dict[Var, Range], predicate: PrimExpr) -> list[dict[Var, int]]:
    axes = [range(r.min.value, r.min.value + r.extent.value) for r in iters.values()]
    points = [dict(zip(iters, values, strict=True)) for values in itertools.product(*axes)]
    return [p for p in points if evaluate(predicate, p)]


def _box(index: IterSumExpr) -> range:
    """The values a dense detected index takes."""
    if not index.args:
        return range(index.base.value, index.base.value + 1)
    split = index.args[0]
    assert isinstance(split.extent, IntImm)
    assert abs(split.scale.value) == 1
    low = index.base.value if split.scale.value == 1 else index.base.value - split.extent.value + 1
    return range(low, low + split.extent.value)


def _detect(case: IterMapCase, check_level: str = "bijective"):
    iters, indices, predicate = case.build()
    result = detect_iter_map(indices, iters, predicate, check_level)
    assert result, result.errors
    return iters, indices, predicate, result


@pytest.mark.parametrize("case", BIJECTIVE_MAPS, ids=str)
def test_detected_indices_normalise_to_the_original_values(case):
    iters, indices, predicate, result = _detect(case)
    normalised = [normalize_iter_map_to_expr(index) for index in result.indices]
    for point in _domain(iters, predicate):
        assert [evaluate(e, point) for e in normalised] == [evaluate(e, point) for e in indices]


@pytest.mark.parametrize("case", BIJECTIVE_MAPS, ids=str)
def test_bijective_map_is_one_to_one_onto_the_box_of_its_index_extents(case):
    iters, indices, predicate, result = _detect(case)
    images = {tuple(evaluate(e, p) for e in indices) for p in _domain(iters, predicate)}
    box = set(itertools.product(*(_box(index) for index in result.indices)))
    assert len(images) == len(_domain(iters, predicate))
    assert images == box


@pytest.mark.parametrize("case", BIJECTIVE_MAPS, ids=str)
@pytest.mark.parametrize("simplify", [False, True], ids=["built", "simplified"])
def test_inverse_of_bijective_map_recovers_every_point(case, simplify):
    iters, indices, predicate, result = _detect(case)
    outputs = [Var(f"o{k}") for k in range(len(indices))]
    inverse = inverse_iter_map(result, iters, outputs, Analyzer() if simplify else None)
    assert set(inverse) == set(iters)
    for point in _domain(iters, predicate):
        image = {o: evaluate(e, point) for o, e in zip(outputs, indices, strict=True)}
        assert {v: evaluate(inverse[v], image) for v in iters} == point


# ---- the shape of what is detected -----------------------------------------------------------


def _iters(**extents: int) -> tuple[list[Var], dict[Var, Range]]:
    variables = [Var(name) for name in extents]
    ranges = {
        v: Range.from_min_extent(0, e) for v, e in zip(variables, extents.values(), strict=True)
    }
    return variables, ranges


def test_single_iterator_is_the_whole_split_of_its_own_mark():
    (i,), iters = _iters(i=8)
    (index,) = detect_iter_map([i], iters, check_level="bijective").indices
    (split,) = index.args
    assert split.source.source is i
    assert (split.lower_factor.value, split.extent.value, split.scale.value) == (1, 8, 1)


def test_split_takes_two_digits_of_one_mark():
    (i,), iters = _iters(i=8)
    high, low = detect_iter_map([i // 4, i % 4], iters, check_level="bijective").indices
    assert high.args[0].source is low.args[0].source
    assert (high.args[0].lower_factor.value, high.args[0].extent.value) == (4, 2)
    assert (low.args[0].lower_factor.value, low.args[0].extent.value) == (1, 4)


def test_fuse_makes_one_mark_over_the_product_of_extents():
    (i, j), iters = _iters(i=4, j=8)
    (index,) = detect_iter_map([i * 8 + j], iters, check_level="bijective").indices
    mark = index.args[0].source
    assert mark.extent.value == 32
    assert isinstance(mark.source, IterSumExpr)
    assert [arg.scale.value for arg in mark.source.args] == [8, 1]
    assert [arg.source.source for arg in mark.source.args] == [i, j]


def test_split_of_fuse_shares_the_fused_mark():
    (i, j), iters = _iters(i=4, j=8)
    fused = i * 8 + j
    high, low = detect_iter_map([fused // 4, fused % 4], iters, check_level="bijective").indices
    assert high.args[0].source is low.args[0].source
    assert high.args[0].source.extent.value == 32
    assert (high.args[0].lower_factor.value, high.args[0].extent.value) == (4, 8)


def test_constant_offset_becomes_the_base():
    (i, j), iters = _iters(i=4, j=8)
    (index,) = detect_iter_map([i * 8 + j + 5], iters).indices
    assert index.base.value == 5
    assert index.args[0].source.extent.value == 32


def test_nonzero_minimum_shifts_the_mark_and_keeps_the_minimum_as_base():
    i = Var("i")
    (index,) = detect_iter_map([i], {i: Range.from_min_extent(2, 6)}).indices
    assert index.base.value == 2
    assert index.args[0].source.extent.value == 6


def test_unit_extent_iterator_is_its_minimum():
    i, u = Var("i"), Var("u")
    iters = {i: Range.from_min_extent(0, 4), u: Range.from_min_extent(3, 1)}
    first, second = detect_iter_map([i, u], iters, check_level="bijective").indices
    assert len(first.args) == 1
    assert second.args == ()
    assert second.base.value == 3


def test_predicate_on_fused_sum_narrows_its_mark():
    (i, j), iters = _iters(i=4, j=4)
    result = detect_iter_map([i * 4 + j], iters, i * 4 + j < 14, "bijective")
    (index,) = result.indices
    assert index.args[0].source.extent.value == 14


def test_predicate_lower_bound_shifts_the_mark():
    (i, j), iters = _iters(i=4, j=4)
    predicate = builders.logical_and(i * 4 + j >= 2, i * 4 + j < 14)
    (index,) = detect_iter_map([i * 4 + j], iters, predicate, "bijective").indices
    assert index.args[0].source.extent.value == 12
    assert index.base.value == 2


def test_predicate_written_with_iterators_on_both_sides_is_understood():
    (i, j), iters = _iters(i=4, j=4)
    result = detect_iter_map([i * 4 + j], iters, i * 4 < 14 - j, "bijective")
    assert result.indices[0].args[0].source.extent.value == 14


def test_recombined_digits_are_the_iterator_itself():
    (i,), iters = _iters(i=8)
    (index,) = detect_iter_map([i // 4 * 4 + i % 4], iters, check_level="bijective").indices
    assert index.args[0].source.source is i
    assert index.args[0].extent.value == 8


def test_int64_iterators_keep_their_dtype():
    i = Var("i", "int64")
    iters = {i: Range(builders.const(0, "int64"), builders.const(8, "int64"))}
    high, low = detect_iter_map([i // 4, i % 4], iters, check_level="bijective").indices
    assert high.dtype == low.dtype == i.dtype
    assert normalize_iter_map_to_expr(high).dtype == i.dtype
    inverse = inverse_iter_map([high, low], iters, [Var("a", "int64"), Var("b", "int64")])
    assert inverse[i].dtype == i.dtype


def test_symbolic_extent_fuses():
    i, j, n = Var("i"), Var("j"), SizeVar("n")
    iters = {i: Range.from_min_extent(0, 4), j: Range(builders.const(0), n)}
    (index,) = detect_iter_map([i * n + j], iters, check_level="bijective").indices
    assert str(index.args[0].source.extent) == str(n * 4)


# ---- surjective maps ------------------------------------------------------------------------

SURJECTIVE_MAPS = [
    IterMapCase("high-digit-only", {"i": 8}, lambda i: [i // 2]),
    IterMapCase("low-digit-only", {"i": 8}, lambda i: [i % 4]),
    IterMapCase("skipped-middle-digit", {"i": 16}, lambda i: [i // 4, i % 2]),
    IterMapCase("unused-iterator", {"i": 4, "j": 3}, lambda i, j: [i]),
    IterMapCase("scaled-index", {"i": 4}, lambda i: [i * 2]),
]


@pytest.mark.parametrize("case", SURJECTIVE_MAPS, ids=str)
def test_surjective_map_reaches_every_point_of_its_index_digits(case):
    iters, indices, predicate, result = _detect(case, "surjective")
    images = {tuple(evaluate(e, p) for e in indices) for p in _domain(iters, predicate)}
    normalised = [normalize_iter_map_to_expr(index) for index in result.indices]
    for point in _domain(iters, predicate):
        assert [evaluate(e, point) for e in normalised] == [evaluate(e, point) for e in indices]
    sizes = [index.args[0].extent.value if index.args else 1 for index in result.indices]
    assert len(images) == _product(sizes)


def _product(values: list[int]) -> int:
    total = 1
    for value in values:
        total *= value
    return total


@pytest.mark.parametrize("case", SURJECTIVE_MAPS, ids=str)
def test_surjective_but_not_bijective_maps_are_refused_when_bijective_is_asked(case):
    iters, indices, predicate = case.build()
    result = detect_iter_map(indices, iters, predicate, "bijective")
    assert not result
    assert result.indices == ()
    assert "not bijective" in result.errors[0]


# ---- refusals, with the reason --------------------------------------------------------------


def _errors(indices, check_level="bijective", predicate=None, **extents) -> str:
    variables, iters = _iters(**extents)
    condition = predicate(*variables) if predicate else True
    result = detect_iter_map(indices(*variables), iters, condition, check_level)
    assert not result
    assert result.indices == ()
    return " ".join(result.errors)


def test_high_digit_alone_is_not_bijective():
    message = _errors(lambda i: [i // 2], i=8)
    assert (
        "the map is not bijective: splits of `i` do not cover it (nothing takes `i % 2`)" in message
    )


def test_low_digit_alone_is_not_bijective():
    message = _errors(lambda i: [i % 4], i=8)
    assert "splits of `i` do not cover it (nothing takes `i // 4`)" in message


def test_sum_of_iterators_that_do_not_nest_is_refused():
    message = _errors(lambda i, j: [i + j], "surjective", i=4, j=8)
    assert "`i + j` cannot be fused into one iterator" in message


def test_scaled_iterator_does_not_cover_its_range():
    message = _errors(lambda i: [i * 2], i=8)
    assert "not bijective: index `i * 2` steps by 2" in message
    assert "does not cover" in message


def test_iterator_used_twice_is_refused():
    assert "iterator `i` is used twice" in _errors(lambda i: [i, i], "surjective", i=8)


def test_overlapping_digits_count_as_using_the_iterator_twice():
    message = _errors(lambda i: [i // 2, i % 4], "surjective", i=8)
    assert "iterator `i` is used twice: `i // 2` and `i % 4` overlap" in message


def test_fused_iterator_used_twice_is_refused():
    message = _errors(lambda i, j: [i * 8 + j, (i * 8 + j) // 2], "surjective", i=4, j=8)
    assert "is used twice" in message


def test_product_of_iterators_is_not_affine():
    assert "`i * j` is not affine in the iterators" in _errors(lambda i, j: [i * j + 1], i=4, j=4)


def test_min_of_iterators_is_not_affine():
    message = _errors(lambda i: [builders.min_value(i, 3)], "surjective", i=8)
    assert "is not affine in the iterators" in message


def test_division_that_does_not_divide_the_extent_is_refused():
    message = _errors(lambda i: [i // 3], "surjective", i=8)
    assert "index `i // 3`: the divisor 3 does not divide extent 8" in message


def test_modulo_that_does_not_divide_the_extent_is_refused():
    assert "does not divide extent 8" in _errors(lambda i: [i % 3], "surjective", i=8)


def test_division_by_an_iterator_is_refused():
    message = _errors(lambda i, j: [i // (j + 1)], "surjective", i=8, j=2)
    assert "depends on the iterators" in message


def test_offset_that_is_not_a_multiple_of_the_divisor_is_refused():
    message = _errors(lambda i: [(i + 1) // 4], "surjective", i=8)
    assert "the offset 1 is not a multiple of the divisor 4" in message


def test_unused_iterator_is_not_bijective():
    assert "iterator `j` is not used" in _errors(lambda i, j: [i], i=4, j=3)


def test_predicate_that_leaves_no_value_is_refused():
    message = _errors(lambda i: [i], "surjective", predicate=lambda i: i < 0, i=8)
    assert "leaves no value" in message


def test_predicate_that_leaves_no_value_of_a_sum_is_refused():
    message = _errors(lambda i, j: [i * 4 + j], "surjective", lambda i, j: i * 4 + j < 0, i=4, j=4)
    assert "leaves no value of `i * 4 + j`" in message


def test_predicate_that_is_not_a_bound_is_refused():
    message = _errors(lambda i: [i], "surjective", predicate=lambda i: i == 3, i=8)
    assert "is not a bound" in message


def test_predicates_on_sums_that_overlap_without_nesting_are_refused():
    a, b, c = Var("a"), Var("b"), Var("c")
    iters = {v: Range.from_min_extent(0, 3) for v in (a, b, c)}
    predicate = builders.logical_and(a * 3 + b < 5, b * 3 + c < 5)
    result = detect_iter_map([a * 9 + b * 3 + c], iters, predicate)
    assert (
        "`b * 3 + c` uses only part of `a * 3 + b`, a sum the predicate bounds" in result.errors[0]
    )


def test_range_that_depends_on_an_iterator_is_refused():
    i, j = Var("i"), Var("j")
    iters = {i: Range.from_min_extent(0, 4), j: Range(builders.const(0), i + 1)}
    result = detect_iter_map([i, j], iters)
    assert "the range of `j` depends on the iterator `i`" in result.errors[0]


def test_no_check_level_accepts_an_iterator_used_twice():
    (i,), iters = _iters(i=8)
    assert detect_iter_map([i, i], iters, check_level="no_check")


def test_unknown_check_level_is_a_value_error():
    (i,), iters = _iters(i=8)
    with pytest.raises(ValueError, match="check_level"):
        detect_iter_map([i], iters, check_level="injective")


# ---- inverse_iter_map refusals --------------------------------------------------------------


def test_inverting_a_failed_detection_names_the_reason():
    (i,), iters = _iters(i=8)
    result = detect_iter_map([i // 2], iters, check_level="bijective")
    with pytest.raises(IterMapError, match="not detected: .*do not cover"):
        inverse_iter_map(result, iters, [Var("o")])


def test_inverting_a_scaled_map_is_refused():
    (i,), iters = _iters(i=8)
    result = detect_iter_map([i * 2], iters)
    with pytest.raises(IterMapError, match="steps by 2"):
        inverse_iter_map(result, iters, [Var("o")])


def test_inverting_needs_one_output_per_index():
    (i,), iters = _iters(i=8)
    result = detect_iter_map([i // 4, i % 4], iters, check_level="bijective")
    with pytest.raises(IterMapError, match="2 indices but 1 output"):
        inverse_iter_map(result, iters, [Var("o")])
