"""Every simplifier rule is a law: both sides evaluate equal wherever its guard holds."""

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tessel.arith.analyzer import Analyzer
from tessel.arith.pattern import PIfThenElse, PNode, PVar
from tessel.arith.rule import RuleSet
from tessel.arith.rules import DEFAULT_RULE_SETS
from tessel.arith.sum_rules import SUM_LAWS
from tessel.ir import builders
from tessel.ir.expr import And, Call, IntImm, Not, Or, Select
from tessel.support.dtype import int64
from tessel.support.errors import IRTypeError
from tessel.testing.arith_strategies import evaluate
from tessel.tir.builtin import if_then_else_op

ALL_RULES = [rule for rule_set in (*DEFAULT_RULE_SETS, SUM_LAWS) for rule in rule_set]
LAW_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


def _bool_vars(pattern, found=None):
    """Names of pattern variables used as conditions (operands of and/or/not/select)."""
    found = set() if found is None else found
    if isinstance(pattern, PNode):
        for index, operand in enumerate(pattern.operands):
            is_condition = pattern.node_cls in (And, Or, Not) or (
                pattern.node_cls is Select and index == 0
            )
            if is_condition and isinstance(operand, PVar):
                found.add(operand.name)
            _bool_vars(operand, found)
    elif isinstance(pattern, PIfThenElse):
        if isinstance(pattern.condition, PVar):
            found.add(pattern.condition.name)
        for part in (pattern.condition, pattern.true_value, pattern.false_value):
            _bool_vars(part, found)
    return found


def _variables(rule):
    seen = {}
    for side in (rule.lhs, rule.rhs):
        for v in side.variables():
            seen.setdefault(v.name, v)
    return list(seen.values())


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.name)
@LAW_SETTINGS
@given(data=st.data())
def test_rule_preserves_value(rule, data):
    conditions = _bool_vars(rule.lhs) | _bool_vars(rule.rhs)
    bindings = {}
    for var in _variables(rule):
        if var.name in conditions:
            bindings[var.name] = builders.const(data.draw(st.booleans(), label=var.name), "bool")
        else:
            value = data.draw(st.integers(-64, 64), label=var.name)
            bindings[var.name] = IntImm(int64, value)
    bindings["__if_then_else__"] = Call(int64, if_then_else_op, ())  # carries the op
    try:
        guard = rule.guard_holds(bindings, Analyzer())
        lhs = rule.lhs.build(bindings, int64)
        rhs = rule.rhs.build(bindings, lhs.dtype)
    except (IRTypeError, ZeroDivisionError):  # a division by zero is outside every law
        assume(False)
    assume(guard)
    assert evaluate(lhs, {}) == evaluate(rhs, {}), f"{rule}: {lhs} != {rhs}"


def test_rule_names_are_unique_kebab_case():
    names = [rule.name for rule in ALL_RULES]
    assert len(names) == len(set(names))
    assert all(name == name.lower() and " " not in name and "_" not in name for name in names)


def test_a_rule_set_refuses_two_rules_of_one_name():
    rule = ALL_RULES[0]
    with pytest.raises(ValueError, match="names several rules"):
        RuleSet("twice", [rule, rule])
