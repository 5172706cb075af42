"""Exact integer-set questions through isl, checked against brute-force enumeration."""

import itertools

import pytest

from tessel.arith import presburger
from tessel.arith.presburger import (
    NotPresburger,
    can_prove,
    is_injective,
    is_surjective_onto,
    padding_predicate,
    region_covered,
)
from tessel.ir import builders
from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Op,
    Or,
    Range,
    Select,
    SizeVar,
    Sub,
    Var,
)
from tessel.ir.functor import post_order
from tessel.support.dtype import DataType
from tessel.support.errors import InternalError

R = Range.from_min_extent


def _truncdiv(x, y):
    return abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)


_BINARY = {
    Add: lambda x, y: x + y,
    Sub: lambda x, y: x - y,
    Mul: lambda x, y: x * y,
    FloorDiv: lambda x, y: x // y,
    FloorMod: lambda x, y: x % y,
    Div: _truncdiv,
    Mod: lambda x, y: x - _truncdiv(x, y) * y,
    Min: min,
    Max: max,
    EQ: lambda x, y: x == y,
    NE: lambda x, y: x != y,
    LT: lambda x, y: x < y,
    LE: lambda x, y: x <= y,
    GT: lambda x, y: x > y,
    GE: lambda x, y: x >= y,
    And: lambda x, y: x and y,
    Or: lambda x, y: x or y,
}


def evaluate(expr, env):
    """The exact integer (or bool) value of `expr` with Vars bound by `env` (keyed by identity)."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, Not):
        return not evaluate(expr.a, env)
    if isinstance(expr, Select):
        taken = evaluate(expr.condition, env)
        return evaluate(expr.true_value if taken else expr.false_value, env)
    if isinstance(expr, Cast):
        return int(evaluate(expr.value, env))
    if isinstance(expr, Let):
        return evaluate(expr.body, {**env, expr.var: evaluate(expr.value, env)})
    return int(_BINARY[type(expr)](evaluate(expr.a, env), evaluate(expr.b, env)))


def points(domain, env=None):
    """Every point of a box-or-triangular domain, as env dicts."""
    env = dict(env or {})
    if not domain:
        yield env
        return
    (var, extent), *rest = domain.items()
    low = evaluate(extent.min, env)
    for value in range(low, low + evaluate(extent.extent, env)):
        yield from points(dict(rest), {**env, var: value})


def unhit_points(indices, domain, new_shape, env=None):
    hit = {tuple(evaluate(e, p) for e in indices) for p in points(domain, env)}
    return {k for k in itertools.product(*(range(s) for s in new_shape)) if k not in hit}


def assert_padding_matches_enumeration(indices, domain, new_shape, env=None):
    new_vars = [Var(f"o{d}") for d in range(len(new_shape))]
    predicate = padding_predicate(indices, domain, new_shape, new_vars)
    shape = [evaluate(builders.convert(s), env or {}) for s in new_shape]
    expected = unhit_points(indices, domain, shape, env)
    for point in itertools.product(*(range(s) for s in shape)):
        value = evaluate(predicate, {**(env or {}), **dict(zip(new_vars, point, strict=True))})
        assert bool(value) == (point in expected), (str(predicate), point)
    return predicate


i, j, k = Var("i"), Var("j"), Var("k")
n = SizeVar("n")


def test_fused_index_bound_is_proved():
    assert can_prove(i * 4 + j < 64, {i: R(0, 16), j: R(0, 4)})


def test_bound_off_by_one_is_not_proved():
    assert not can_prove(i * 4 + j < 63, {i: R(0, 16), j: R(0, 4)})


def test_assumptions_restrict_the_domain():
    domain = {i: R(0, 16), j: R(0, 4)}
    assert can_prove(i * 4 + j < 63, domain, [~(i == 15) | (j < 3)])
    assert can_prove(i < 8, domain, [i * 2 < 16])


def test_free_symbols_are_quantified_universally():
    assert can_prove(i < n, {i: R(0, n)})
    assert not can_prove(i < n - 1, {i: R(0, n)})
    assert can_prove(i < n - 1, {i: R(0, n)}, [i != n - 1])
    assert not can_prove(i + k < n, {i: R(0, n)})


def test_size_var_is_known_non_negative_and_var_is_not():
    m = Var("m")
    assert can_prove(n >= 0, {})
    assert not can_prove(m >= 0, {})


def test_bool_variable_is_known_to_be_zero_or_one():
    flag = Var("flag", "bool")
    assert can_prove(Cast(DataType.of("int32"), flag) <= 1, {})
    assert can_prove(flag | (i < 8), {i: R(0, 8)})
    assert not can_prove(flag, {})


def test_two_vars_with_one_name_are_different_variables():
    first, second = Var("i"), Var("i")
    domain = {first: R(0, 4), second: R(0, 4)}
    assert not can_prove(first == second, domain)
    assert can_prove(first - first == 0, domain)


def test_triangular_domain_bounds_depend_on_outer_var():
    assert can_prove(j <= i, {i: R(0, 8), j: R(0, i + 1)})
    assert not can_prove(j < i, {i: R(0, 8), j: R(0, i + 1)})


SCALAR_EXPRS = [
    i // 4 * 4 + i % 4,
    i // 3,
    i % 3,
    i // -3,
    i % -3,
    builders.truncdiv(i, 3),
    builders.truncmod(i, 3),
    builders.truncdiv(i, -3),
    builders.truncmod(i, -3),
    builders.min_value(i, 3 - j),
    builders.max_value(i * 2, j + 5),
    builders.select(i < j, i - j, j * 3),
    builders.select(i % 2 == 0, i, -i) + j,
    Cast(DataType.of("int64"), i + j),
    Cast(DataType.of("int32"), i < j) * 5 + i,
    Let(k, i + 1, k * 2 + j),
]


@pytest.mark.parametrize("expr", SCALAR_EXPRS, ids=lambda e: type(e).__name__)
def test_exact_bounds_of_each_expression_form_match_enumeration(expr):
    domain = {i: R(-7, 15), j: R(-2, 5)}
    values = [evaluate(expr, p) for p in points(domain)]
    low, high = min(values), max(values)
    assert can_prove(expr <= high, domain)
    assert not can_prove(expr <= high - 1, domain)
    assert can_prove(expr >= low, domain)
    assert not can_prove(expr >= low + 1, domain)


def test_boolean_connectives_match_enumeration():
    domain = {i: R(-3, 8), j: R(-3, 8)}
    conditions = [
        (i < j) | (i >= j),
        ~((i < 2) & (j < 2)) | (i + j < 4),
        builders.select(i < 0, j >= -3, i >= 0),
        (i % 2 == 0) | (i % 2 == 1),
        (i // 2 * 2 == i) | (i % 2 != 0),
        (i < j) & (j < i),
        ~(i == j),
    ]
    for condition in conditions:
        expected = all(evaluate(condition, p) for p in points(domain))
        assert can_prove(condition, domain) == expected, str(condition)


def test_split_and_fuse_maps_are_injective():
    assert is_injective([i // 4, i % 4], {i: R(0, 14)})
    assert is_injective([i * 4 + j], {i: R(0, 16), j: R(0, 4)})
    assert is_injective([j, i], {i: R(0, n), j: R(0, 3)})


def test_floordiv_by_two_is_not_injective():
    assert not is_injective([i // 2], {i: R(0, 14)})
    assert not is_injective([i * 3 + j], {i: R(0, 16), j: R(0, 4)})


def test_predicate_can_make_a_map_injective():
    assert is_injective([i // 2], {i: R(0, 14)}, predicate=i % 2 == 0)


def test_surjectivity_onto_a_box():
    assert is_surjective_onto([i // 4, i % 4], {i: R(0, 16)}, [4, 4])
    assert not is_surjective_onto([i // 4, i % 4], {i: R(0, 14)}, [4, 4])
    assert not is_surjective_onto([2 * i], {i: R(0, 4)}, [8])
    assert is_surjective_onto([j, i], {i: R(0, 3), j: R(0, 5)}, [5, 3])


def test_region_coverage_of_written_indices():
    assert region_covered([i], {i: R(0, 16)}, [R(4, 8)])
    assert not region_covered([i], {i: R(0, 16)}, [R(10, 8)])
    assert region_covered([i], {i: R(0, n)}, [R(0, n)])
    assert not region_covered([i], {i: R(0, n)}, [R(0, n + 1)])
    assert not region_covered([i, j], {i: R(0, 4), j: R(0, 4)}, [R(0, 4), R(0, 4)], i != j)


def test_padding_of_split_with_remainder_is_the_last_row_tail():
    predicate = assert_padding_matches_enumeration([i // 4, i % 4], {i: R(0, 14)}, [4, 4])
    assert not any(isinstance(node, FloorDiv | FloorMod) for node in post_order(predicate))
    assert len([node for node in post_order(predicate) if isinstance(node, And)]) <= 1


def test_padding_of_strided_map_is_the_odd_elements():
    assert_padding_matches_enumeration([2 * i], {i: R(0, 4)}, [8])
    assert_padding_matches_enumeration([3 * i + 1], {i: R(0, 4)}, [12])
    assert_padding_matches_enumeration([(i * 3) % 5], {i: R(0, 3)}, [5])


def test_padding_of_triangular_domain_is_the_upper_triangle():
    assert_padding_matches_enumeration([i, j], {i: R(0, 5), j: R(0, i + 1)}, [5, 5])


def test_padding_with_symbolic_extent_matches_enumeration_for_each_extent():
    indices, domain, shape = [i // 4, i % 4], {i: R(0, n)}, [n // 4 + 1, 4]
    for value in range(0, 13):
        assert_padding_matches_enumeration(indices, domain, shape, env={n: value})


def test_padding_is_false_for_a_surjective_map_and_true_for_an_empty_domain():
    new_vars = [Var("o0"), Var("o1")]
    surjective = padding_predicate([i // 4, i % 4], {i: R(0, 16)}, [4, 4], new_vars)
    assert builders.is_const_int(surjective, 0)
    empty = padding_predicate([i // 4, i % 4], {i: R(0, 0)}, [4, 4], new_vars)
    assert builders.is_const_int(empty, 1)


def test_product_of_variables_is_not_presburger():
    with pytest.raises(NotPresburger, match="multiplies"):
        can_prove(i * j < 64, {i: R(0, 8), j: R(0, 8)})


def test_division_by_a_variable_is_not_presburger():
    with pytest.raises(NotPresburger, match="non-constant"):
        can_prove(i // j < 8, {i: R(0, 8), j: R(1, 8)})
    with pytest.raises(NotPresburger, match="non-constant"):
        is_injective([i % n], {i: R(0, 8)})
    with pytest.raises(NotPresburger, match="zero"):
        can_prove(i // (j - j) < 8, {i: R(0, 8), j: R(0, 8)})


def test_calls_floats_and_narrowing_casts_are_not_presburger():
    call = Call(DataType.of("int32"), Op("tir.exp"), (i,))
    with pytest.raises(NotPresburger):
        can_prove(call < 8, {i: R(0, 8)})
    with pytest.raises(NotPresburger):
        can_prove(Cast(DataType.of("float32"), i) < builders.const(8.0), {i: R(0, 8)})
    with pytest.raises(NotPresburger):
        can_prove(Call(DataType.of("bool"), Op("tir.likely"), (i < 4,)), {i: R(0, 8)})
    with pytest.raises(NotPresburger, match="wrap"):
        can_prove(Cast(DataType.of("int8"), i) < 8, {i: R(0, 8)})


def test_new_vars_that_are_domain_vars_are_rejected():
    with pytest.raises(InternalError, match="new"):
        padding_predicate([i], {i: R(0, 4)}, [8], [i])


def test_question_over_isl_budget_is_handed_back_as_not_presburger(monkeypatch):
    monkeypatch.setattr(presburger, "_MAX_OPERATIONS", 1)
    with pytest.raises(NotPresburger, match="budget"):
        is_injective([i // 4, i % 4, j % 3], {i: R(0, 14), j: R(0, 9)})
