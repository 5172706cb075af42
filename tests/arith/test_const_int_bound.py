"""const_int_bound: hand-written cases for each rule, and soundness on random expressions."""

import itertools
import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tessel.arith.const_int_bound import ConstIntBound, const_int_bound
from tessel.ir import builders
from tessel.ir.expr import (
    LT,
    Add,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    IntImm,
    Let,
    Mod,
    Op,
    Select,
    SizeVar,
    Var,
)
from tessel.support.dtype import bool_, int8, int32, int64, uint8
from tessel.testing.arith_strategies import (
    ALL_OPS,
    ARITH_SETTINGS,
    evaluate,
    int_exprs,
    points_in,
    var_ranges,
)

x, y, z = Var("x", int64), Var("y", int64), Var("z", int64)
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def bounds(**ranges: tuple[int, int]) -> dict[Var, ConstIntBound]:
    """Bounds for x, y, z given as keyword ranges."""
    by_name = {"x": x, "y": y, "z": z}
    return {by_name[name]: ConstIntBound(*r) for name, r in ranges.items()}


def exact_hull(expr, **ranges: tuple[int, int]) -> ConstIntBound:
    """The exact [min, max] of expr over every point of small ranges of x, y, z."""
    by_name = {"x": x, "y": y, "z": z}
    names = list(ranges)
    values = [
        evaluate(expr, dict(zip([by_name[n] for n in names], point, strict=True)))
        for point in itertools.product(*(range(lo, hi + 1) for lo, hi in ranges.values()))
    ]
    return ConstIntBound(min(values), max(values))


def k(value: int, dtype=int64) -> IntImm:
    return IntImm(dtype, value)


# ---- the bound type -----------------------------------------------------------------------------


def test_bound_helpers_build_points_dtype_ranges_and_everything():
    assert ConstIntBound.point(3) == ConstIntBound(3, 3)
    assert ConstIntBound.point(3).is_point
    assert ConstIntBound.everything() == ConstIntBound(-math.inf, math.inf)
    assert not ConstIntBound.everything().is_point
    assert ConstIntBound.of_dtype(bool_) == ConstIntBound(0, 1)
    assert ConstIntBound.of_dtype("int8") == ConstIntBound(-128, 127)
    assert ConstIntBound.of_dtype(uint8) == ConstIntBound(0, 255)
    assert ConstIntBound.of_dtype("float32").is_everything


def test_bound_intersect_union_and_contains():
    a, b = ConstIntBound(0, 10), ConstIntBound(5, math.inf)
    assert a.intersect(b) == ConstIntBound(5, 10)
    assert a.union(b) == ConstIntBound(0, math.inf)
    assert a.contains(0)
    assert a.contains(10)
    assert not a.contains(11)
    assert b.contains(10**30)


def test_bound_ends_are_ints_or_float_infinities():
    bound = ConstIntBound(1.5, 7.5)  # a real interval narrowed to its integers
    assert bound == ConstIntBound(2, 7)
    assert type(bound.min_value) is int
    assert type(bound.max_value) is int
    assert ConstIntBound(math.nan, math.nan) == ConstIntBound.everything()


# ---- leaves -------------------------------------------------------------------------------------


def test_unbounded_var_has_its_dtype_range():
    assert const_int_bound(Var("i")) == ConstIntBound(I32_MIN, I32_MAX)
    assert const_int_bound(Var("b", bool_)) == ConstIntBound(0, 1)


def test_size_var_is_non_negative_and_clamped_to_its_dtype():
    n = SizeVar("n")
    assert const_int_bound(n) == ConstIntBound(0, I32_MAX)
    assert const_int_bound(n + 1) == ConstIntBound(1, I32_MAX)
    assert const_int_bound(n, {n: ConstIntBound(-5, 5)}) == ConstIntBound(0, 5)


def test_var_bounds_are_clamped_to_the_dtype_range():
    i = Var("i", int8)
    assert const_int_bound(i, {i: ConstIntBound(-1000, 5)}) == ConstIntBound(-128, 5)


def test_float_expression_is_unbounded():
    f = Var("f", "float32")
    assert const_int_bound(f + FloatImm(f.dtype, 1.0)).is_everything


# ---- arithmetic ---------------------------------------------------------------------------------


def test_add_sub_mul_follow_interval_arithmetic():
    vb = bounds(x=(-2, 3), y=(4, 5))
    assert const_int_bound(x + y, vb) == ConstIntBound(2, 8)
    assert const_int_bound(x - y, vb) == ConstIntBound(-7, -1)
    assert const_int_bound(x * y, vb) == ConstIntBound(-10, 15)
    assert const_int_bound(x * x, vb) == ConstIntBound(-6, 9)  # x taken independently


def test_zero_times_an_unbounded_side_is_zero():
    vb = {x: ConstIntBound(0, math.inf), y: ConstIntBound.point(0)}
    assert const_int_bound(x * y, vb) == ConstIntBound(0, 0)


def test_floordiv_by_four_of_zero_to_fifteen_is_zero_to_three():
    assert const_int_bound(x // 4, bounds(x=(0, 15))) == ConstIntBound(0, 3)


def test_floordiv_rounds_negative_dividends_down():
    assert const_int_bound(x // 4, bounds(x=(-5, 5))) == ConstIntBound(-2, 1)
    assert const_int_bound(x // -4, bounds(x=(-5, 5))) == ConstIntBound(-2, 1)


@pytest.mark.parametrize(("divisor", "expected"), [((2, 3), (-5, 5)), ((-3, -2), (-5, 5))])
def test_floordiv_by_a_one_signed_interval_matches_the_exact_hull(divisor, expected):
    expr = FloorDiv(x, y)
    found = const_int_bound(expr, bounds(x=(-10, 10), y=divisor))
    assert found == exact_hull(expr, x=(-10, 10), y=divisor) == ConstIntBound(*expected)


def test_division_by_an_interval_holding_zero_skips_the_zero_divisor():
    expr = FloorDiv(x, y)
    found = const_int_bound(expr, bounds(x=(0, 10), y=(-2, 3)))
    assert found == ConstIntBound(-10, 10)  # y = 1 and y = -1 reach both ends


def test_truncating_division_rounds_toward_zero():
    vb = bounds(x=(-7, 7))
    assert const_int_bound(Div(x, k(2)), vb) == ConstIntBound(-3, 3)
    assert const_int_bound(Div(x, k(-2)), vb) == ConstIntBound(-3, 3)
    assert const_int_bound(Div(x, k(2)), bounds(x=(-7, -1))) == ConstIntBound(-3, 0)


def test_floormod_by_positive_constant_is_within_zero_to_c_minus_one():
    assert const_int_bound(x % 8, bounds(x=(-100, 100))) == ConstIntBound(0, 7)
    assert const_int_bound(x % 8) == ConstIntBound(0, 7)


def test_floormod_inside_one_period_keeps_the_operand_range():
    assert const_int_bound(x % 8, bounds(x=(3, 5))) == ConstIntBound(3, 5)
    assert const_int_bound(x % 8, bounds(x=(11, 13))) == ConstIntBound(3, 5)
    assert const_int_bound(x % 8, bounds(x=(-7, -6))) == ConstIntBound(1, 2)
    assert const_int_bound(x % 8, bounds(x=(6, 9))) == ConstIntBound(0, 7)


def test_floormod_of_small_non_negative_dividend_is_the_dividend():
    assert const_int_bound(x % y, bounds(x=(0, 3), y=(8, 16))) == ConstIntBound(0, 3)


def test_floormod_of_x_times_8_plus_y_is_within_y_range():
    vb = bounds(x=(0, 100), y=(0, 7))
    assert const_int_bound((x * 8 + y) % 8, vb) == ConstIntBound(0, 7)


def test_floormod_by_negative_constant_is_non_positive():
    assert const_int_bound(x % -8, bounds(x=(-100, 100))) == ConstIntBound(-7, 0)
    assert const_int_bound(x % -8, bounds(x=(1, 3))) == exact_hull(x % -8, x=(1, 3))


def test_truncating_mod_takes_the_dividend_sign():
    assert const_int_bound(Mod(x, k(4)), bounds(x=(-7, 7))) == ConstIntBound(-3, 3)
    assert const_int_bound(Mod(x, k(4)), bounds(x=(0, 7))) == ConstIntBound(0, 3)
    assert const_int_bound(Mod(x, k(-4)), bounds(x=(-7, 0))) == ConstIntBound(-3, 0)
    assert const_int_bound(Mod(x, k(4)), bounds(x=(-2, 1))) == ConstIntBound(-2, 1)


def test_min_and_max_combine_the_ends():
    vb = bounds(x=(0, 10), y=(5, 20))
    assert const_int_bound(builders.min_value(x, y), vb) == ConstIntBound(0, 10)
    assert const_int_bound(builders.max_value(x, y), vb) == ConstIntBound(5, 20)


# ---- casts --------------------------------------------------------------------------------------


def test_cast_keeps_a_source_range_that_fits_the_target():
    assert const_int_bound(Cast(int8, x), bounds(x=(0, 100))) == ConstIntBound(0, 100)


def test_cast_to_int8_of_a_range_that_does_not_fit_is_the_int8_range():
    assert const_int_bound(Cast(int8, x), bounds(x=(0, 300))) == ConstIntBound(-128, 127)
    assert const_int_bound(Cast(int64, Cast(int8, x))) == ConstIntBound(-128, 127)
    assert const_int_bound(Cast(uint8, x), bounds(x=(-1, 1))) == ConstIntBound(0, 255)


def test_cast_to_bool_is_within_zero_and_one():
    assert const_int_bound(Cast(bool_, x), bounds(x=(0, 9))) == ConstIntBound(0, 1)


def test_cast_of_float_to_int_is_the_target_range():
    f = Var("f", "float32")
    assert const_int_bound(Cast(int8, f)) == ConstIntBound(-128, 127)


# ---- conditions and choices ---------------------------------------------------------------------


def test_comparison_is_decided_from_disjoint_bounds():
    vb = bounds(x=(0, 5), y=(10, 20))
    assert const_int_bound(x < y, vb) == ConstIntBound(1, 1)
    assert const_int_bound(x >= y, vb) == ConstIntBound(0, 0)
    assert const_int_bound(LT(x, y), bounds(x=(0, 15), y=(10, 20))) == ConstIntBound(0, 1)
    assert const_int_bound(builders.eq(x, y), vb) == ConstIntBound(0, 0)
    assert const_int_bound(builders.ne(x, y), vb) == ConstIntBound(1, 1)


def test_and_or_not_stay_within_zero_and_one():
    vb = bounds(x=(0, 5), y=(0, 20))
    undecided, true = x < y, x < 10
    assert const_int_bound(undecided & true, vb) == ConstIntBound(0, 1)
    assert const_int_bound(undecided | true, vb) == ConstIntBound(1, 1)
    assert const_int_bound(~true, vb) == ConstIntBound(0, 0)


def test_select_is_the_union_of_its_branches_unless_decided():
    vb = bounds(x=(0, 5), y=(10, 20))
    assert const_int_bound(Select(x < 3, x, y), vb) == ConstIntBound(0, 20)
    assert const_int_bound(Select(x < 7, x, y), vb) == ConstIntBound(0, 5)


def test_if_then_else_is_the_union_of_its_branches():
    call = Call(int64, Op("tir.if_then_else"), (x < 3, x, y + 10))
    assert const_int_bound(call, bounds(x=(0, 5), y=(0, 1))) == ConstIntBound(0, 11)


def test_let_binds_the_value_bound_to_the_variable():
    v = Var("v", int64)
    expr = Let(v, x + 1, v * 2)
    assert const_int_bound(expr, bounds(x=(0, 3))) == ConstIntBound(2, 8)


def test_same_variable_bound_by_two_lets_keeps_each_binding():
    v = Var("v", int64)
    body = v * 2  # one shared node under two different bindings of v
    expr = Add(Let(v, k(1), body), Let(v, k(10), body))
    assert const_int_bound(expr) == ConstIntBound(22, 22)


# ---- atoms --------------------------------------------------------------------------------------


def test_unknown_call_has_its_dtype_range():
    load = Call(int8, Op("test.load"), (x,))
    assert const_int_bound(load) == ConstIntBound(-128, 127)


def test_atom_bound_supplies_facts_about_opaque_atoms():
    load = Call(int32, Op("test.load"), ())
    facts = {load: ConstIntBound(0, 10)}
    found = const_int_bound(load + 1, atom_bound=facts.get)
    assert found == ConstIntBound(1, 11)


def test_atom_bound_is_intersected_with_the_computed_bound():
    def atom_bound(expr):
        return ConstIntBound(5, 100) if expr is x else None

    assert const_int_bound(x, bounds(x=(0, 10)), atom_bound) == ConstIntBound(5, 10)


# ---- size ---------------------------------------------------------------------------------------


def test_shared_subtrees_are_analysed_once():
    expr = x
    for _ in range(1000):  # 1000 nodes, 2**1000 paths: only memoisation makes this finish
        expr = Add(expr, expr)
    assert const_int_bound(expr, bounds(x=(0, 0))) == ConstIntBound(0, 0)


def test_deep_expression_does_not_exhaust_the_python_stack():
    expr = x
    for _ in range(5000):
        expr = Add(expr, k(1))
    assert const_int_bound(expr, bounds(x=(0, 0))) == ConstIntBound(5000, 5000)


# ---- soundness on random expressions ------------------------------------------------------------


@ARITH_SETTINGS
@given(data=st.data())
def test_sampled_value_lies_within_the_bound(data):
    expr = data.draw(int_exprs([x, y, z], max_depth=4, ops=ALL_OPS))
    ranges = data.draw(var_ranges([x, y, z]))
    env = data.draw(points_in(ranges))
    try:
        value = evaluate(expr, env, wrap=False)
    except OverflowError:  # the analysis, like TVM's, assumes no overflow
        assume(False)
    found = const_int_bound(expr, {v: ConstIntBound(*r) for v, r in ranges.items()})
    assert found.contains(value), f"{expr} = {value} at {env}, outside {found}"
