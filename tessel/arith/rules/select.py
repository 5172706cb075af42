"""Select and if_then_else: constant and same branches, branches equal under the condition."""

from tessel.arith.facts import negate
from tessel.arith.pattern import PVar, pif_then_else, pselect
from tessel.arith.rule import Match, Rule, RuleSet

c, x, y = PVar("c"), PVar("x"), PVar("y")


def _equal_under_condition(m: Match) -> bool:
    """x == y wherever c holds (buffer constraints make padding branches go away, RFC 77)."""
    with m.analyzer.constraint_scope(m.c):
        return m.analyzer.can_prove_equal(m.x, m.y, exact=False)


def _equal_under_negation(m: Match) -> bool:
    """x == y wherever c does not hold."""
    with m.analyzer.constraint_scope(negate(m.c)):
        return m.analyzer.can_prove_equal(m.x, m.y, exact=False)


SELECT_RULES = RuleSet(
    "select",
    [
        Rule("select-same", pselect(c, x, x), x),
        Rule("select-not", pselect(~c, x, y), pselect(c, y, x)),
        Rule("select-true-branch-everywhere", pselect(c, x, y), y, when=_equal_under_condition),
        Rule("select-false-branch-everywhere", pselect(c, x, y), x, when=_equal_under_negation),
        Rule("if-then-else-same", pif_then_else(c, x, x), x),
        Rule(
            "if-then-else-true-branch-everywhere",
            pif_then_else(c, x, y),
            y,
            when=_equal_under_condition,
        ),
        Rule(
            "if-then-else-false-branch-everywhere",
            pif_then_else(c, x, y),
            x,
            when=_equal_under_negation,
        ),
    ],
)
