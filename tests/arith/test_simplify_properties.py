"""simplify(e) evaluates equal to e on random expressions and points; bounds contain every value."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessel.arith.analyzer import Analyzer
from tessel.ir.expr import Range, Var
from tessel.testing.arith_strategies import evaluate, int_exprs, points_in, var_ranges

X, Y, Z = Var("x", "int64"), Var("y", "int64"), Var("z", "int64")
PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _analyzer_for(ranges):
    analyzer = Analyzer()
    for var, (lo, hi) in ranges.items():
        analyzer.bind(var, Range.from_min_extent(lo, hi - lo + 1))
    return analyzer


@PROPERTY_SETTINGS
@given(data=st.data(), expr=int_exprs([X, Y, Z], max_depth=4))
def test_simplify_preserves_value_under_bindings(data, expr):
    ranges = data.draw(var_ranges([X, Y, Z], -40, 40))
    analyzer = _analyzer_for(ranges)
    simplified = analyzer.simplify(expr)
    for _ in range(5):
        point = data.draw(points_in(ranges))
        assert evaluate(simplified, point) == evaluate(expr, point), f"{expr}  ->  {simplified}"


@PROPERTY_SETTINGS
@given(data=st.data(), expr=int_exprs([X, Y], max_depth=4))
def test_simplify_without_bindings_preserves_value(data, expr):
    simplified = Analyzer().simplify(expr)
    point = data.draw(points_in({X: (-100, 100), Y: (-100, 100)}))
    assert evaluate(simplified, point) == evaluate(expr, point), f"{expr}  ->  {simplified}"


@PROPERTY_SETTINGS
@given(data=st.data(), expr=int_exprs([X, Y], max_depth=4))
def test_analyzer_bounds_and_modular_sets_contain_every_value(data, expr):
    ranges = data.draw(var_ranges([X, Y], -40, 40))
    analyzer = _analyzer_for(ranges)
    bound, residue = analyzer.const_int_bound(expr), analyzer.modular_set(expr)
    for _ in range(5):
        value = evaluate(expr, data.draw(points_in(ranges)))
        assert bound.contains(value), f"{expr} = {value} outside {bound}"
        assert residue.contains(value), f"{expr} = {value} outside {residue}"


@PROPERTY_SETTINGS
@given(data=st.data(), expr=int_exprs([X, Y], max_depth=3))
def test_simplify_is_idempotent(data, expr):
    analyzer = _analyzer_for(data.draw(var_ranges([X, Y], -20, 20)))
    once = analyzer.simplify(expr)
    assert analyzer.simplify(once) is once or str(analyzer.simplify(once)) == str(once)
