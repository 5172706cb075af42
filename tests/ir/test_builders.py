"""Expression builders: constant folding agrees with NumPy in the dtype; dtype matching rules."""

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tessel.ir import builders
from tessel.ir.expr import Add, Broadcast, Cast, FloatImm, IntImm, PrimExpr, Var
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


def _ints_of(dtype: str) -> st.SearchStrategy[int]:
    info = np.iinfo(dtype)
    return st.integers(int(info.min), int(info.max))


@st.composite
def int_pairs(draw, nonzero_divisor=False):
    """A dtype and two values of it (the second nonzero when it is a divisor)."""
    dtype = draw(st.sampled_from(INT_DTYPES))
    x = draw(_ints_of(dtype))
    y = draw(_ints_of(dtype).filter(lambda v: v != 0 or not nonzero_divisor))
    return dtype, x, y


@st.composite
def float_pairs(draw, allow_nan=True):
    """A float dtype and two values exactly representable in it."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    width = DataType.of(dtype).bits
    values = st.floats(width=width, allow_nan=allow_nan)
    return dtype, draw(values), draw(values)


def _numpy(op, dtype, x, y):
    """`op` applied by NumPy to 0-d arrays of `dtype` (arrays wrap silently, as C does)."""
    with np.errstate(all="ignore"):
        return op(np.array(x, dtype=dtype), np.array(y, dtype=dtype))[()]


def _folded_value(expr: PrimExpr):
    assert isinstance(expr, IntImm | FloatImm), f"expected a folded constant, got {expr!r}"
    return expr.value


def _same(folded, expected) -> bool:
    if isinstance(expected, np.floating) and np.isnan(expected):
        return np.isnan(folded)
    return folded == expected


INT_BUILDERS = {
    "add": (builders.add, operator.add),
    "sub": (builders.sub, operator.sub),
    "mul": (builders.mul, operator.mul),
    "min": (builders.min_value, np.minimum),
    "max": (builders.max_value, np.maximum),
}
DIV_BUILDERS = {
    "floordiv": (builders.floordiv, operator.floordiv),
    "floormod": (builders.floormod, operator.mod),
    # C-style truncation: NumPy's fmod keeps the dividend's sign; the quotient follows from it.
    "truncmod": (builders.truncmod, np.fmod),
    "truncdiv": (builders.truncdiv, lambda x, y: (x - np.fmod(x, y)) // y),
}
COMPARISONS = {
    "eq": (builders.eq, operator.eq),
    "ne": (builders.ne, operator.ne),
    "lt": (builders.lt, operator.lt),
    "le": (builders.le, operator.le),
    "gt": (builders.gt, operator.gt),
    "ge": (builders.ge, operator.ge),
}


@pytest.mark.parametrize("name", sorted(INT_BUILDERS))
@given(case=int_pairs())
def test_integer_folding_matches_numpy_with_wraparound(name, case):
    dtype, x, y = case
    build, reference = INT_BUILDERS[name]
    folded = build(builders.const(x, dtype), builders.const(y, dtype))
    assert folded.dtype == DataType.of(dtype)
    assert _folded_value(folded) == _numpy(reference, dtype, x, y)


@pytest.mark.parametrize("name", sorted(DIV_BUILDERS))
@given(case=int_pairs(nonzero_divisor=True))
def test_integer_division_folding_matches_numpy_for_negative_operands(name, case):
    dtype, x, y = case
    build, reference = DIV_BUILDERS[name]
    if y == -1 and x == int(np.iinfo(dtype).min):  # undefined in C: refused, as the runtime does
        with pytest.raises(IRTypeError, match="overflows"):
            build(builders.const(x, dtype), builders.const(y, dtype))
        return
    folded = build(builders.const(x, dtype), builders.const(y, dtype))
    assert _folded_value(folded) == _numpy(reference, dtype, x, y)


@pytest.mark.parametrize(
    ("x", "y", "floordiv", "floormod"),
    [(7, 2, 3, 1), (-7, 2, -4, 1), (7, -2, -4, -1), (-7, -2, 3, -1)],
)
def test_floor_division_signs_follow_python(x, y, floordiv, floormod):
    assert builders.floordiv(builders.const(x), y).value == floordiv == x // y
    assert builders.floormod(builders.const(x), y).value == floormod == x % y


@pytest.mark.parametrize("dtype", ["int8", "int32"])
def test_wraparound_at_the_dtype_edges(dtype):
    info = np.iinfo(dtype)
    top, bottom = builders.const(int(info.max), dtype), builders.const(int(info.min), dtype)
    assert (top + 1).value == info.min
    assert (bottom - 1).value == info.max
    assert builders.neg(bottom).value == info.min


@pytest.mark.parametrize("name", ["floordiv", "floormod", "truncdiv", "truncmod"])
def test_integer_division_by_constant_zero_is_an_error(name):
    build = DIV_BUILDERS[name][0]
    with pytest.raises(IRTypeError, match="division by the constant zero"):
        build(builders.const(5), builders.const(0))


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
@given(case=float_pairs())
def test_float_folding_matches_numpy(name, case):
    dtype, x, y = case
    build, reference = INT_BUILDERS[name]
    folded = build(builders.const(x, dtype), builders.const(y, dtype))
    assert folded.dtype == DataType.of(dtype)
    assert _same(_folded_value(folded), _numpy(reference, dtype, x, y))


@pytest.mark.parametrize("name", ["min", "max"])
@given(case=float_pairs(allow_nan=False))
def test_float_min_max_folding_matches_numpy(name, case):
    dtype, x, y = case
    build, reference = INT_BUILDERS[name]
    folded = build(builders.const(x, dtype), builders.const(y, dtype))
    assert _same(_folded_value(folded), _numpy(reference, dtype, x, y))


@given(case=float_pairs())
def test_float_division_folding_matches_numpy_including_zero_divisors(case):
    dtype, x, y = case
    folded = builders.div(builders.const(x, dtype), builders.const(y, dtype))
    assert _same(_folded_value(folded), _numpy(operator.truediv, dtype, x, y))


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@given(case=st.one_of(int_pairs(), float_pairs()))
def test_comparison_folding_matches_numpy(name, case):
    dtype, x, y = case
    build, reference = COMPARISONS[name]
    folded = build(builders.const(x, dtype), builders.const(y, dtype))
    assert folded.dtype == DataType.of("bool")
    assert bool(folded.value) == bool(_numpy(reference, dtype, x, y))


@given(case=int_pairs())
def test_negation_folding_matches_numpy(case):
    dtype, x, _ = case
    with np.errstate(all="ignore"):
        expected = np.negative(np.array(x, dtype=dtype))[()]
    assert builders.neg(builders.const(x, dtype)).value == expected


@given(dtype=st.sampled_from(INT_DTYPES), target=st.sampled_from(INT_DTYPES), data=st.data())
def test_integer_cast_folding_wraps_like_numpy_astype(dtype, target, data):
    x = data.draw(_ints_of(dtype))
    folded = builders.cast(builders.const(x, dtype), target)
    assert folded.value == np.array(x, dtype=dtype).astype(target)[()]


@given(x=st.floats(-1e6, 1e6, width=32), target=st.sampled_from(["int32", "int64"]))
def test_float_to_int_cast_folding_truncates_like_numpy(x, target):
    folded = builders.cast(builders.const(x, "float32"), target)
    assert folded.value == np.array(x, dtype="float32").astype(target)[()]


@given(x=_ints_of("int64"), target=st.sampled_from(FLOAT_DTYPES))
def test_int_to_float_cast_folding_rounds_like_numpy(x, target):
    folded = builders.cast(builders.const(x, "int64"), target)
    with np.errstate(all="ignore"):
        assert folded.value == np.array(x, dtype="int64").astype(target)[()]


@given(a=st.booleans(), b=st.booleans())
def test_logical_folding_matches_python(a, b):
    x, y = builders.const(a), builders.const(b)
    assert builders.logical_and(x, y).value == (a and b)
    assert builders.logical_or(x, y).value == (a or b)
    assert builders.logical_not(x).value == (not a)


def test_identities_fold_away_without_building_nodes():
    x = Var("x")
    assert builders.add(x, 0) is x
    assert builders.add(0, x) is x
    assert builders.sub(x, 0) is x
    assert builders.mul(x, 1) is x
    assert builders.mul(x, 0).value == 0
    assert builders.floordiv(x, 1) is x
    assert builders.floormod(x, 1).value == 0


def test_select_with_constant_condition_picks_a_side():
    x, y = Var("x"), Var("y")
    assert builders.select(True, x, y) is x
    assert builders.select(builders.const(1) > 2, x, y) is y


# -- dtype matching -----------------------------------------------------------------------------


def test_python_int_takes_the_float_dtype_of_the_expression():
    x = Var("x", "float32")
    total = x + 1
    assert isinstance(total, Add)
    assert total.dtype == DataType.of("float32")
    assert isinstance(total.b, FloatImm)
    assert total.b.value == 1.0


def test_python_float_with_int_expression_promotes_to_float():
    i = Var("i", "int32")
    total = i + 0.5
    assert total.dtype == DataType.of("float32")
    assert isinstance(total.a, Cast)
    assert total.a.value is i


@pytest.mark.parametrize(
    ("other", "result"),
    [
        ("float16", "float32"),
        ("float32", "float32"),
        ("float64", "float64"),
        ("int32", "bfloat16"),
    ],
)
def test_bfloat16_combines_into_a_float_that_holds_both(other, result):
    total = Var("x", "bfloat16") + Var("y", other)
    assert total.dtype == DataType.of(result)


def test_bfloat16_constant_folding_rounds_to_nearest_even_through_float32():
    assert builders.cast(1 + 2**-8 + 2**-30, "bfloat16").value == 1.0  # float32 drops 2**-30
    assert builders.cast(1 + 3 * 2**-9, "bfloat16").value == 1 + 2**-7


def test_python_int_keeps_the_integer_dtype_of_the_expression():
    n = Var("n", "int64")
    total = n * 3
    assert total.dtype == DataType.of("int64")
    assert total.b.dtype == DataType.of("int64")


def test_int32_and_int64_widen_to_int64():
    i, n = Var("i", "int32"), Var("n", "int64")
    total = i + n
    assert total.dtype == DataType.of("int64")
    assert isinstance(total.a, Cast)
    assert total.a.value is i
    assert total.b is n


def test_narrow_int_widens_to_the_wider_int():
    small, wide = Var("s", "int8"), Var("w", "int32")
    assert (small - wide).dtype == DataType.of("int32")


def test_signed_and_unsigned_of_one_width_do_not_mix():
    with pytest.raises(IRTypeError, match="cast one side explicitly"):
        Var("a", "int32") + Var("b", "uint32")


def test_scalar_meets_vector_by_broadcast():
    v, s = Var("v", "float32x4"), Var("s", "float32")
    total = v + s
    assert total.dtype == DataType.of("float32x4")
    assert isinstance(total.b, Broadcast)
    assert total.b.value is s
    assert (v * 2.0).dtype == DataType.of("float32x4")


def test_vectors_of_different_lanes_do_not_mix():
    with pytest.raises(IRTypeError, match="lanes"):
        Var("a", "float32x4") + Var("b", "float32x8")


def test_python_int_too_large_for_the_expression_dtype_is_an_error():
    with pytest.raises(IRTypeError, match="does not fit"):
        Var("i", "int32") + 2**40


def test_default_constant_dtypes():
    assert builders.const(1).dtype == DataType.of("int32")
    assert builders.const(2**40).dtype == DataType.of("int64")
    assert builders.const(1.5).dtype == DataType.of("float32")
    assert builders.const(True).dtype == DataType.of("bool")


# -- symbolic conditions as Python bools --------------------------------------------------------


def test_bool_of_a_symbolic_condition_raises_a_helpful_type_error():
    i = Var("i")
    with pytest.raises(TypeError, match="symbolic condition") as err:
        bool(i < 4)
    assert "select" in str(err.value)


def test_if_on_a_symbolic_condition_raises():
    i = Var("i")
    with pytest.raises(TypeError, match="Python bool"):
        if i > 0:
            pass


def test_bool_of_a_folded_constant_condition_works():
    assert bool(builders.const(3) < 4)
    assert not bool(builders.const(3) > 4)


def test_equality_in_a_user_lambda_builds_ir_but_is_identity_as_a_bool():
    i, j = Var("i"), Var("j")
    pad_predicate = (lambda a, b: (a == 3) | (b != 0))(i, j)
    assert isinstance(pad_predicate, PrimExpr)
    assert str(pad_predicate) == "i == 3 or j != 0"
    assert str(builders.select(i == j, i, j)) == "T.Select(i == j, i, j)"
    assert bool(i == i) and not bool(i == j) and bool(i != j)
    assert {i: "i", j: "j"}[j] == "j"  # nodes stay usable as dict keys
    assert builders.convert(builders.const(3) == 3).value == 1  # folded once it becomes IR


def test_folding_int_min_divided_by_minus_one_is_refused_like_at_run_time():
    for divide in (builders.floordiv, builders.floormod, builders.truncdiv, builders.truncmod):
        with pytest.raises(IRTypeError, match="overflows int32"):
            divide(builders.const(-(2**31)), builders.const(-1))


def test_string_constant_holds_a_string():
    from tessel.ir.expr import StringImm

    with pytest.raises(IRTypeError, match="holds a str"):
        StringImm(3)
