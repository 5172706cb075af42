"""The Analyzer service: bindings, scoped facts (buffer constraints included), proofs, traces."""

import pytest

from tessel.arith.analyzer import Analyzer
from tessel.arith.pattern import PVar
from tessel.arith.rewrite import StepLimitExceededError
from tessel.arith.rule import Rule, RuleSet
from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.ir.structural import same_expr
from tessel.tir.buffer import decl_buffer
from tessel.tir.builtin import if_then_else


def _ranged(**extents):
    analyzer = Analyzer()
    variables = []
    for name, extent in extents.items():
        var = Var(name)
        analyzer.bind(var, Range.from_min_extent(0, extent))
        variables.append(var)
    return analyzer, variables


def test_buffer_constraint_proves_the_padding_branch_away():
    analyzer, (i,) = _ranged(i=16)
    A = decl_buffer((16,), "int32", "A")
    padded = if_then_else(i >= 14, 0, A[i])
    constraint = builders.logical_or(builders.logical_not(i >= 14), A[i] == 0)
    with analyzer.constraint_scope(constraint), analyzer.trace() as steps:
        assert same_expr(analyzer.simplify(padded), A[i])
    assert "if-then-else-true-branch-everywhere" in [s.rule for s in steps]
    # Without the constraint the branch is needed.
    assert not same_expr(analyzer.simplify(padded), A[i])


def test_float_buffer_constraint_with_zero_pad_value():
    analyzer, (i,) = _ranged(i=16)
    A = decl_buffer((16,), "float32", "A")
    zero = builders.const(0.0, "float32")
    constraint = builders.logical_or(i < 14, A[i] == zero)
    with analyzer.constraint_scope(constraint):
        assert same_expr(analyzer.simplify(if_then_else(i >= 14, zero, A[i])), A[i])


def test_fact_in_scope_proves_symbolic_comparison_and_leaves_with_the_scope():
    analyzer = Analyzer()
    i, n = Var("i"), Var("n")
    assert not analyzer.can_prove(i < n)
    with analyzer.constraint_scope(i < n):
        assert analyzer.can_prove(i < n)
        assert analyzer.can_prove(i < n + 1)
        assert analyzer.can_prove(i - 1 < n)
        assert analyzer.simplify(builders.select(i < n, i, n)) is i
    assert not analyzer.can_prove(i < n)


def test_single_variable_facts_tighten_bounds():
    analyzer = Analyzer()
    x = Var("x")
    with analyzer.constraint_scope(builders.logical_and(0 <= x, x < 10)):
        bound = analyzer.const_int_bound(x * 2 + 1)
        assert (bound.min_value, bound.max_value) == (1, 19)
        assert analyzer.simplify(x // 10).value == 0


def test_bind_to_a_value_substitutes_it():
    analyzer = Analyzer()
    x, y = Var("x"), Var("y")
    analyzer.bind(x, y * 2)
    assert str(analyzer.simplify(x + y)) == "y * 3"


def test_rebinding_needs_allow_override():
    analyzer, (i,) = _ranged(i=4)
    with pytest.raises(ValueError, match="already bound"):
        analyzer.bind(i, Range.from_min_extent(0, 8))
    analyzer.bind(i, Range.from_min_extent(0, 8), allow_override=True)
    assert analyzer.const_int_bound(i).max_value == 7


def test_can_prove_equal_on_fused_index_round_trip():
    analyzer, (i, j) = _ranged(i=4, j=8)
    fused = i * 8 + j
    assert analyzer.can_prove_equal(fused // 8, i)
    assert analyzer.can_prove_equal(fused % 8, j)
    assert not analyzer.can_prove_equal(fused // 4, i)


def test_exact_fallback_proves_what_rules_cannot():
    # Rules do not relate x and y through two facts at once; islpy does.
    analyzer = Analyzer()
    x, y = Var("x"), Var("y")
    with analyzer.constraint_scope(builders.logical_and(x < y, y < 10)):
        assert analyzer.can_prove(x < 9)
        assert not analyzer.can_prove(x < 8)


def test_trace_records_rule_names_in_order():
    analyzer, (i, j) = _ranged(i=16, j=4)
    with analyzer.trace() as steps:
        analyzer.simplify((i // 4) * 4 + i % 4 + (i * 4 + j) // 4)
    names = [s.rule for s in steps]
    assert names.index("floordiv-mod-join") >= 0 and "floordiv-by-bound" in names
    assert all(str(s).startswith(s.rule + ":") for s in steps)


def test_a_rule_cycle_hits_the_step_limit_with_the_rules_named():
    x, y = PVar("x"), PVar("y")
    swap = RuleSet("swap", [Rule("lt-swap", x < y, y > x), Rule("gt-swap", x > y, y < x)])
    analyzer = Analyzer(rule_sets=(swap,), step_limit=50)
    a, b = Var("a"), Var("b")
    with pytest.raises(StepLimitExceededError, match="lt-swap|gt-swap"):
        analyzer.simplify(builders.select(a < b, a, b))


def test_simplify_returns_the_same_object_when_nothing_changes():
    x = Var("x")
    expr = x // 3
    assert Analyzer().simplify(expr) is expr


def test_simplified_results_are_forgotten_when_what_is_known_changes():
    analyzer = Analyzer()
    i = Var("i")
    below = i < 10
    assert analyzer.simplify(below) is below  # nothing known of i yet
    with analyzer.constraint_scope(i < 3):
        assert analyzer.simplify(below).value == 1
    assert analyzer.simplify(below) is below  # the scope's fact is gone
    analyzer.bind(i, Range.from_min_extent(0, 5))
    assert analyzer.simplify(below).value == 1


def test_a_range_widened_inside_a_scope_is_not_forgotten_when_it_ends():
    analyzer = Analyzer()
    i = Var("i")
    analyzer.bind(i, Range.from_min_extent(0, 4))
    below = i < 10
    assert analyzer.simplify(below).value == 1
    with analyzer.constraint_scope(i >= 0):
        analyzer.bind(i, Range.from_min_extent(0, 100), allow_override=True)
    assert analyzer.simplify(below) is below


def test_a_trace_lists_the_rules_for_an_expression_simplified_before():
    analyzer, (i,) = _ranged(i=16)
    expr = (i // 4) * 4 + i % 4
    first = analyzer.simplify(expr)
    with analyzer.trace() as steps:
        assert analyzer.simplify(expr) is first
    assert [s.rule for s in steps] == ["floordiv-mod-join", "sum-collect-terms"]


@pytest.mark.parametrize("dtype", ["uint32", "int8", "int16"])
def test_types_that_wrap_around_are_only_folded(dtype):
    x = Var("x", dtype)
    analyzer = Analyzer()
    for expr in (x - 1 < x, (x + 1) - 1, builders.min_value(x + 1, x)):
        assert analyzer.simplify(expr) is expr, f"{expr} must not be rewritten for {dtype}"


def test_bounds_of_wrapping_arithmetic_cover_the_whole_type():
    analyzer = Analyzer()
    y, z = Var("y", "uint8"), Var("z", "uint8")
    analyzer.bind(y, Range.from_min_extent(17, 16))
    analyzer.bind(z, Range.from_min_extent(10, 20))
    bound = analyzer.const_int_bound(y * z)  # 17*10 .. 32*29 wraps around in uint8
    assert (bound.min_value, bound.max_value) == (0, 255)
    select = builders.select(builders.const(1, "uint8") < y * z, y + builders.const(1, "uint8"), y)
    assert analyzer.simplify(select) is select
