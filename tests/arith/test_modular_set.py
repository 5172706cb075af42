"""modular_set: the set type, hand-written cases for each rule, soundness on random expressions."""

from hypothesis import assume, given
from hypothesis import strategies as st

from tessel.arith.modular_set import ModularSet, modular_set
from tessel.ir import builders
from tessel.ir.expr import Call, Cast, Div, FloatImm, IntImm, Let, Mod, Op, Select, Var
from tessel.support.dtype import int8, int32, int64
from tessel.testing.arith_strategies import ALL_OPS, ARITH_SETTINGS, evaluate, int_exprs

x, y, z = Var("x", int64), Var("y", int64), Var("z", int64)


def k(value: int) -> IntImm:
    return IntImm(int64, value)


# ---- the set type -------------------------------------------------------------------------------


def test_construction_normalises_coeff_and_base():
    assert ModularSet(-4, 7) == ModularSet(4, 3)
    assert ModularSet(4, -1) == ModularSet(4, 3)
    assert ModularSet(0, -5).base == -5
    assert ModularSet.everything() == ModularSet(1, 0)


def test_contains_checks_the_residue():
    assert ModularSet(4, 1).contains(-7)
    assert not ModularSet(4, 1).contains(2)
    assert ModularSet.point(5).contains(5)
    assert not ModularSet.point(5).contains(9)


def test_union_keeps_the_common_stride():
    assert ModularSet(4, 1).union(ModularSet(6, 3)) == ModularSet(2, 1)
    assert ModularSet.point(3).union(ModularSet.point(11)) == ModularSet(8, 3)
    assert ModularSet.point(3).union(ModularSet.point(3)) == ModularSet.point(3)


def test_intersect_solves_the_chinese_remainder_problem():
    assert ModularSet(4, 1).intersect(ModularSet(6, 3)) == ModularSet(12, 9)
    assert ModularSet(3, 2).intersect(ModularSet(5, 1)) == ModularSet(15, 11)
    assert ModularSet(4, 1).intersect(ModularSet.point(9)) == ModularSet.point(9)


def test_intersect_of_disjoint_sets_over_approximates_by_the_first():
    assert ModularSet(4, 0).intersect(ModularSet(4, 1)) == ModularSet(4, 0)
    assert ModularSet.point(2).intersect(ModularSet(4, 1)) == ModularSet.point(2)


# ---- rules --------------------------------------------------------------------------------------


def test_constant_is_a_point_and_unknown_var_is_everything():
    assert modular_set(k(7)) == ModularSet.point(7)
    assert modular_set(x) == ModularSet.everything()
    assert modular_set(x, {x: ModularSet(4, 2)}) == ModularSet(4, 2)


def test_add_sub_keep_the_gcd_of_the_strides():
    sets = {x: ModularSet(4, 1), y: ModularSet(6, 0)}
    assert modular_set(x + y, sets) == ModularSet(2, 1)
    assert modular_set(x - k(3), sets) == ModularSet(4, 2)


def test_x_times_8_plus_3_is_three_modulo_eight():
    assert modular_set(x * 8 + 3) == ModularSet(8, 3)


def test_product_of_two_sets_uses_the_gcd_rule():
    sets = {x: ModularSet(4, 2), y: ModularSet(6, 3)}
    # (4k + 2)(6l + 3) = 24kl + 12k + 12l + 6
    assert modular_set(x * y, sets) == ModularSet(12, 6)


def test_floordiv_by_a_divisor_of_the_stride():
    assert modular_set((x * 8 + 3) // 4) == ModularSet(2, 0)
    assert modular_set((x * 8 + 12) // 4) == ModularSet(2, 1)
    assert modular_set((x * 8 + 3) // 16) == ModularSet.everything()


def test_floormod_by_a_divisor_of_the_stride_is_a_point():
    assert modular_set((x * 8 + 3) % 4) == ModularSet.point(3)
    assert modular_set((x * 8 + 3) % -4) == ModularSet.point(-1)


def test_floormod_by_another_constant_keeps_the_common_stride():
    assert modular_set((x * 6 + 4) % 4) == ModularSet(2, 0)


def test_of_x_times_8_plus_y_modulo_8_is_y_set():
    assert modular_set((x * 8 + y) % 8, {y: ModularSet(2, 1)}) == ModularSet(2, 1)


def test_truncating_division_needs_exact_division():
    assert modular_set(Div(x * 8 + 4, k(4))) == ModularSet(2, 1)
    assert modular_set(Div(x * 8 + 3, k(4))) == ModularSet.everything()
    assert modular_set(Mod(x * 8 + 4, k(4))) == ModularSet.point(0)
    assert modular_set(Mod(x * 8 + 3, k(4))) == ModularSet(4, 3)


def test_constant_operands_fold_exactly():
    assert modular_set(Div(k(-7), k(2))) == ModularSet.point(-3)
    assert modular_set(Mod(k(-7), k(2))) == ModularSet.point(-1)
    assert modular_set(builders.max_value(k(3), k(9))) == ModularSet.point(9)


def test_min_max_select_take_the_union():
    a, b = x * 4 + 1, y * 8 + 5
    assert modular_set(builders.min_value(a, b)) == ModularSet(4, 1)
    assert modular_set(builders.max_value(a, b)) == ModularSet(4, 1)
    assert modular_set(Select(x < y, a, b)) == ModularSet(4, 1)
    call = Call(int64, Op("tir.if_then_else"), (x < y, a, b))
    assert modular_set(call) == ModularSet(4, 1)


def test_let_binds_the_value_set():
    v = Var("v", int64)
    assert modular_set(Let(v, x * 6, v + 1)) == ModularSet(6, 1)


def test_widening_cast_keeps_the_set_and_narrowing_forgets_it():
    i = Var("i", int32)
    assert modular_set(Cast(int64, i * 4)) == ModularSet(4, 0)
    assert modular_set(Cast(int8, x * 4)) == ModularSet.everything()


def test_unknown_call_and_float_are_everything():
    assert modular_set(Call(int64, Op("test.load"), ())) == ModularSet.everything()
    f = Var("f", "float32")
    assert modular_set(f * FloatImm(f.dtype, 4.0)) == ModularSet.everything()


# ---- soundness on random expressions ------------------------------------------------------------


@st.composite
def sets_and_points(draw, variables):
    """A modular set for each variable, and a value in each."""
    sets = {v: ModularSet(draw(st.integers(0, 12)), draw(st.integers(-20, 20))) for v in variables}
    env = {v: s.coeff * draw(st.integers(-10, 10)) + s.base for v, s in sets.items()}
    return sets, env


@ARITH_SETTINGS
@given(expr=int_exprs([x, y, z], max_depth=4, ops=ALL_OPS), sets_env=sets_and_points([x, y, z]))
def test_sampled_value_lies_in_the_modular_set(expr, sets_env):
    sets, env = sets_env
    try:
        value = evaluate(expr, env, wrap=False)
    except OverflowError:  # the analysis, like TVM's, assumes no overflow
        assume(False)
    found = modular_set(expr, sets)
    assert found.contains(value), f"{expr} = {value} at {env}, not in {found}"


@ARITH_SETTINGS
@given(
    a=st.builds(ModularSet, st.integers(0, 12), st.integers(-30, 30)),
    b=st.builds(ModularSet, st.integers(0, 12), st.integers(-30, 30)),
    value=st.integers(-200, 200),
)
def test_union_holds_both_and_intersect_holds_the_common_values(a, b, value):
    if a.contains(value) or b.contains(value):
        assert a.union(b).contains(value)
    if a.contains(value) and b.contains(value):
        assert a.intersect(b).contains(value)
