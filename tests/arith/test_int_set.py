"""int_set: the interval type, hand-written cases for each rule, soundness on random expressions."""

from hypothesis import assume, given
from hypothesis import strategies as st

from tessel.arith.const_int_bound import ConstIntBound, const_int_bound
from tessel.arith.int_set import IntSet, int_set
from tessel.ir import builders
from tessel.ir.expr import Call, Cast, Div, IntImm, Let, Mod, Op, Range, Select, Var
from tessel.support.dtype import int8, int32, int64
from tessel.testing.arith_strategies import (
    ALL_OPS,
    ARITH_SETTINGS,
    evaluate,
    int_exprs,
    points_in,
    var_ranges,
)

x, y, z = Var("x", int64), Var("y", int64), Var("z", int64)
n = Var("n", int64)  # a free symbol in most cases below


def k(value: int) -> IntImm:
    return IntImm(int64, value)


def rng(lo: int, hi: int) -> Range:
    """The int64 range [lo, hi] inclusive."""
    return Range(k(lo), k(hi - lo + 1))


def ends(found: IntSet, env: dict | None = None) -> tuple[int | None, int | None]:
    """The set's end points evaluated with the free symbols in `env` (None when unbounded)."""
    env = env or {}
    low = None if found.min_value is None else evaluate(found.min_value, env)
    high = None if found.max_value is None else evaluate(found.max_value, env)
    return low, high


# ---- the set type -------------------------------------------------------------------------------


def test_from_range_covers_min_to_min_plus_extent_minus_one():
    assert ends(IntSet.from_range(rng(0, 15))) == (0, 15)
    symbolic = IntSet.from_range(Range(n, k(4)))
    assert symbolic.min_value is n
    assert ends(symbolic, {n: 10}) == (10, 13)


def test_range_of_extent_one_is_a_point():
    assert IntSet.from_range(Range(n, k(1))).is_point


def test_point_and_everything():
    assert IntSet.point(n).is_point
    assert IntSet.everything().is_everything
    assert not IntSet(k(0), k(1)).is_point


def test_union_takes_the_outer_ends():
    found = IntSet(k(0), n).union(IntSet(k(-3), k(5)))
    assert ends(found, {n: 2}) == (-3, 5)
    assert ends(found, {n: 9}) == (-3, 9)
    assert IntSet(k(0), k(1)).union(IntSet.everything()).is_everything


def test_union_passes_new_ends_through_simplify():
    seen = []

    def simplify(expr):
        seen.append(expr)
        return expr

    found = IntSet(x, k(1)).union(IntSet(y, k(1)), simplify)
    assert found.min_value is seen[0]
    assert found.max_value.value == 1  # equal ends are kept, not wrapped in max


# ---- variables ----------------------------------------------------------------------------------


def test_var_outside_the_domain_stays_a_symbol():
    expr = n * 4 + 3
    found = int_set(expr, {x: rng(0, 3)})
    assert found.is_point
    assert found.min_value is expr


def test_var_domain_may_be_an_int_set():
    found = int_set(x + 1, {x: IntSet(n, n + 2)})
    assert ends(found, {n: 5}) == (6, 8)


def test_symbolic_range_moves_with_its_symbol():
    found = int_set(x * 2 + 1, {x: Range(n, k(4))})
    assert ends(found, {n: 10}) == (21, 27)


# ---- arithmetic ---------------------------------------------------------------------------------


def test_add_sub_combine_opposite_ends():
    dom = {x: rng(0, 3), y: rng(10, 20)}
    assert ends(int_set(x + y, dom)) == (10, 23)
    assert ends(int_set(x - y, dom)) == (-20, -7)


def test_mul_by_negative_constant_swaps_the_ends():
    assert ends(int_set(x * -3, {x: rng(1, 4)})) == (-12, -3)


def test_mul_by_symbol_of_known_sign_uses_const_bound():
    dom = {x: rng(1, 4)}
    assert int_set(x * n, dom).is_everything  # the sign of n is unknown
    found = int_set(x * n, dom, const_bound=lambda e: const_int_bound(e, {n: ConstIntBound(0, 9)}))
    assert ends(found, {n: 3}) == (3, 12)


def test_mul_of_two_ranges_is_everything():
    assert int_set(x * y, {x: rng(0, 3), y: rng(0, 3)}).is_everything


def test_floordiv_by_four_of_zero_to_fifteen_is_zero_to_three():
    assert ends(int_set(x // 4, {x: rng(0, 15)})) == (0, 3)


def test_floordiv_by_negative_constant_swaps_the_ends():
    assert ends(int_set(x // -4, {x: rng(-5, 5)})) == (-2, 1)


def test_truncating_division_by_constant():
    assert ends(int_set(Div(x, k(2)), {x: rng(-7, 7)})) == (-3, 3)


def test_floormod_within_one_constant_period_keeps_the_ends():
    assert ends(int_set(x % 8, {x: rng(3, 5)})) == (3, 5)
    assert ends(int_set(x % 8, {x: rng(11, 13)})) == (3, 5)


def test_floormod_across_periods_is_zero_to_c_minus_one():
    assert ends(int_set(x % 8, {x: rng(6, 9)})) == (0, 7)
    assert ends(int_set(x % -8, {x: rng(6, 9)})) == (-7, 0)


def test_floormod_of_x_times_8_plus_y_is_zero_to_seven():
    found = int_set((x * 8 + y) % 8, {x: rng(0, 10), y: rng(0, 7)})
    assert ends(found) == (0, 7)


def test_floormod_period_is_proven_with_const_bound():
    dom = {x: IntSet(n, n + 2)}
    assert ends(int_set(x % 8, dom), {n: 9}) == (0, 7)
    facts = {n: ConstIntBound(8, 13)}  # n .. n + 2 stays within [8, 15]
    found = int_set(x % 8, dom, const_bound=lambda e: const_int_bound(e, facts))
    assert ends(found, {n: 9}) == (1, 3)


def test_truncating_mod_takes_the_dividend_sign():
    assert ends(int_set(Mod(x, k(4)), {x: rng(0, 9)})) == (0, 3)
    assert ends(int_set(Mod(x, k(4)), {x: rng(-9, 0)})) == (-3, 0)
    assert ends(int_set(Mod(x, k(-4)), {x: rng(-9, 9)})) == (-3, 3)


def test_min_max_combine_the_ends():
    dom = {x: rng(0, 10), y: rng(5, 20)}
    assert ends(int_set(builders.min_value(x, y), dom)) == (0, 10)
    assert ends(int_set(builders.max_value(x, y), dom)) == (5, 20)
    assert ends(int_set(builders.min_value(x, n), dom), {n: 3}) == (0, 3)


def test_select_and_if_then_else_take_the_union():
    dom = {x: rng(0, 5), y: rng(10, 20)}
    assert ends(int_set(Select(x < y, x, y), dom)) == (0, 20)
    call = Call(int64, Op("tir.if_then_else"), (x < 3, x, y + 10))
    assert ends(int_set(call, dom)) == (0, 30)


def test_comparison_over_a_domain_is_false_to_true():
    assert ends(int_set(x < 3, {x: rng(0, 5)})) == (0, 1)


def test_widening_cast_keeps_the_ends_and_narrowing_forgets_them():
    i = Var("i", int32)
    assert ends(int_set(Cast(int64, i), {i: Range(IntImm(int32, 0), IntImm(int32, 8))})) == (0, 7)
    assert int_set(Cast(int8, x), {x: rng(0, 300)}).is_everything


def test_let_binds_the_value_set():
    v = Var("v", int64)
    assert ends(int_set(Let(v, x + 1, v * 2), {x: rng(0, 3)})) == (2, 8)


def test_unknown_call_of_a_domain_var_is_everything():
    assert int_set(Call(int64, Op("test.load"), (x,)), {x: rng(0, 3)}).is_everything


def test_operands_that_become_points_are_rebuilt():
    v = Var("v", int64)
    found = int_set(Let(v, n, v * 4 + 1), {})
    assert ends(found, {n: 2}) == (9, 9)
    assert found.is_point


def test_shared_subtrees_are_analysed_once():
    expr = x
    for _ in range(200):  # 2**200 paths: only memoisation makes this finish
        expr = builders.max_value(expr, expr)
    assert ends(int_set(expr, {x: rng(0, 3)})) == (0, 3)


# ---- soundness on random expressions ------------------------------------------------------------


@st.composite
def domains(draw, variables):
    """Ranges for some variables (constant or offset by the symbol n), and a point in each."""
    ranges = draw(var_ranges(variables))
    env = draw(points_in(ranges))
    shift = draw(st.integers(-5, 5))
    symbolic = draw(st.booleans())
    dom = {}
    for var in draw(st.lists(st.sampled_from(variables), unique=True)):
        lo, hi = ranges[var]
        start = builders.add(n, lo) if symbolic else k(lo)
        dom[var] = Range(start, k(hi - lo + 1))
        env[var] += shift if symbolic else 0
    symbols = {v: ConstIntBound(*r) for v, r in ranges.items() if v not in dom}
    symbols[n] = ConstIntBound.point(shift) if draw(st.booleans()) else ConstIntBound(-5, 5)
    return dom, env, shift, symbols


@ARITH_SETTINGS
@given(
    expr=int_exprs([x, y, z], max_depth=4, ops=ALL_OPS),
    domain=domains([x, y, z]),
    use_bounds=st.booleans(),
)
def test_sampled_value_lies_between_the_evaluated_ends(expr, domain, use_bounds):
    dom, env, shift, symbols = domain
    const_bound = (lambda e: const_int_bound(e, symbols)) if use_bounds else None
    found = int_set(expr, dom, const_bound=const_bound)
    free = {v: value for v, value in env.items() if v not in dom} | {n: shift}
    try:
        value = evaluate(expr, env, wrap=False)
        low = None if found.min_value is None else evaluate(found.min_value, free, wrap=False)
        high = None if found.max_value is None else evaluate(found.max_value, free, wrap=False)
    except OverflowError:  # the analysis, like TVM's, assumes no overflow
        assume(False)
    assert low is None or low <= value, f"{expr} = {value} at {env}, below {found.min_value}"
    assert high is None or value <= high, f"{expr} = {value} at {env}, above {found.max_value}"
