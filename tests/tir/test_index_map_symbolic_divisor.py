"""IndexMap splits by a symbolic divisor: exact only under facts that make it positive and a
divisor of the extent, checked by enumeration for concrete values."""

import pytest

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import IntImm, Var
from tessel.ir.substitute import substitute
from tessel.tir import IndexMap, IndexMapError

n = Var("n", "int32")
m = Var("m", "int32")
SPLIT = IndexMap.from_func(lambda i: (i // n, i % n))


def _value(expr, values):
    folded = Analyzer().simplify(
        substitute(expr, {v: builders.const(x, "int32") for v, x in values.items()})
    )
    assert isinstance(folded, IntImm), folded
    return folded.value


def test_split_of_a_multiple_has_the_quotient_and_divisor_as_shape():
    shape = SPLIT.map_shape((16 * n,), (n > 0,))
    assert [str(e) for e in shape] == ["16", "n"]


def test_split_of_a_nested_product_divides_out_the_factor():
    shape = SPLIT.map_shape((m * n * 4,), (n > 0,))
    assert [str(e) for e in shape] == ["m * 4", "n"]


@pytest.mark.parametrize("value", [1, 2, 5])
def test_inverse_of_a_split_by_a_positive_divisor_undoes_it(value):
    inverse = SPLIT.inverse((16 * n,), (n > 0,))
    assert str(inverse) == "IndexMap.from_func(lambda ax0, ax1: (ax1 + ax0 * n,))"  # TVM's order
    (i,) = SPLIT.initial_indices
    images = set()
    for old in range(16 * value):
        new = [_value(e, {i: old, n: value}) for e in SPLIT.final_indices]
        assert 0 <= new[0] < 16 and 0 <= new[1] < value
        images.add(tuple(new))
        back = inverse.map_indices(new)
        assert _value(back[0], {n: value}) == old
    assert len(images) == 16 * value


def test_split_without_a_positive_divisor_names_the_missing_fact():
    with pytest.raises(IndexMapError) as err:
        SPLIT.map_shape((16 * n,))
    assert err.value.rule == "index_map.divisor-sign-unknown"
    assert err.value.hint == "state it in the function: T.assume(n > 0)"


def test_split_of_an_extent_not_known_to_be_a_multiple_is_not_a_bijection():
    with pytest.raises(IndexMapError) as err:
        SPLIT.inverse((m,), (n > 0,))
    assert err.value.rule == "index_map.not-bijective"
    assert "it pads (m,) to (((0 - m) % n + m) // n, n)" in str(err.value)


@pytest.mark.parametrize(("extent", "divisor"), [(16, 3), (16, 4), (7, 7), (5, 8), (1, 2)])
def test_padded_split_inverse_and_padding_agree_with_enumeration(extent, divisor):
    inverse, padding = SPLIT.non_surjective_inverse((m,), (n > 0, m >= 0))
    q, r = inverse.initial_indices
    values = {m: extent, n: divisor}
    shape = [_value(e, values) for e in SPLIT.map_shape((m,), (n > 0, m >= 0))]
    assert shape == [-(-extent // divisor), divisor]
    hit = set()
    for a in range(shape[0]):
        for b in range(shape[1]):
            point = {**values, q: a, r: b}
            old = _value(inverse.map_indices([a, b])[0], values)
            padded = bool(_value(padding, point))
            assert padded == (old >= extent), (a, b)
            if not padded:
                (i,) = SPLIT.initial_indices
                assert [_value(e, {i: old, n: divisor}) for e in SPLIT.final_indices] == [a, b]
                hit.add(old)
    assert hit == set(range(extent))


def test_a_stated_multiple_splits_without_padding():
    # T.assume(m % n == 0): m // n groups of n, no padding predicate, and an exact inverse
    facts = (n > 0, m % n == 0)
    assert [str(e) for e in SPLIT.map_shape((m,), facts)] == ["m // n", "n"]
    inverse, padding = SPLIT.non_surjective_inverse((m,), facts)
    assert builders.is_const_int(padding, 0)
    assert str(SPLIT.inverse((m,), facts)) == str(inverse)
    assert str(inverse) == "IndexMap.from_func(lambda ax0, ax1: (ax1 + ax0 * n,))"
