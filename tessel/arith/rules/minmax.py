"""min and max: decided by proofs, same-operand and constant-offset forms, nesting."""

from tessel.arith.pattern import PConst, PVar, pmax, pmin
from tessel.arith.rule import Match, Rule, RuleSet
from tessel.ir.expr import IntImm, PrimExpr

x, y, z = PVar("x"), PVar("y"), PVar("z")


def _interned_later(m: Match, a: PrimExpr, b: PrimExpr) -> bool:
    """`a` was met after `b` by the analyzer's atom table (constants always go last)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value > b.value
    if isinstance(a, IntImm) or isinstance(b, IntImm):
        return isinstance(a, IntImm)
    return m.analyzer.table.intern(a) > m.analyzer.table.intern(b)


c1, c2 = PConst("c1"), PConst("c2")

MINMAX_RULES = RuleSet(
    "minmax",
    [
        Rule("min-self", pmin(x, x), x),
        Rule("max-self", pmax(x, x), x),
        Rule("min-left-proven", pmin(x, y), x, when=lambda m: m.can_prove(m.x <= m.y)),
        Rule("min-right-proven", pmin(x, y), y, when=lambda m: m.can_prove(m.y <= m.x)),
        Rule("max-left-proven", pmax(x, y), x, when=lambda m: m.can_prove(m.y <= m.x)),
        Rule("max-right-proven", pmax(x, y), y, when=lambda m: m.can_prove(m.x <= m.y)),
        Rule("min-common-offset", pmin(x + c1, y + c1), pmin(x, y) + c1),
        Rule("max-common-offset", pmax(x + c1, y + c1), pmax(x, y) + c1),
        Rule("min-nested-const", pmin(pmin(x, c1), c2), pmin(x, pmin(c1, c2))),
        Rule("max-nested-const", pmax(pmax(x, c1), c2), pmax(x, pmax(c1, c2))),
        Rule("min-max-absorb", pmin(x, pmax(x, y)), x),
        Rule("max-min-absorb", pmax(x, pmin(x, y)), x),
        Rule("min-max-absorb-swapped", pmin(x, pmax(y, x)), x),
        Rule("max-min-absorb-swapped", pmax(x, pmin(y, x)), x),
        Rule("min-of-max-same-const", pmin(pmax(x, c1), c2), c2, when=lambda m: m.c2 <= m.c1),
        Rule("max-of-min-same-const", pmax(pmin(x, c1), c2), c2, when=lambda m: m.c1 <= m.c2),
        Rule("min-scaled", pmin(x * c1, y * c1), pmin(x, y) * c1, when=lambda m: m.c1 > 0),
        Rule("max-scaled", pmax(x * c1, y * c1), pmax(x, y) * c1, when=lambda m: m.c1 > 0),
        Rule("min-scaled-negative", pmin(x * c1, y * c1), pmax(x, y) * c1, when=lambda m: m.c1 < 0),
        Rule("max-scaled-negative", pmax(x * c1, y * c1), pmin(x, y) * c1, when=lambda m: m.c1 < 0),
        Rule("min-floordiv", pmin(x // c1, y // c1), pmin(x, y) // c1, when=lambda m: m.c1 > 0),
        Rule("max-floordiv", pmax(x // c1, y // c1), pmax(x, y) // c1, when=lambda m: m.c1 > 0),
        Rule("min-sub-self", pmin(x, y) - y, pmin(x - y, 0)),
        Rule("max-sub-self", pmax(x, y) - y, pmax(x - y, 0)),
        Rule("min-plus-max", pmin(x, y) + pmax(x, y), x + y),
        Rule("min-plus-max-swapped", pmin(x, y) + pmax(y, x), x + y),
        # Commutative operands in one order (first-interned first), so min(y, x) meets min(x, y).
        Rule(
            "min-operand-order", pmin(x, y), pmin(y, x), when=lambda m: _interned_later(m, m.x, m.y)
        ),
        Rule(
            "max-operand-order", pmax(x, y), pmax(y, x), when=lambda m: _interned_later(m, m.x, m.y)
        ),
        Rule("lt-min-both", pmin(x, y) < z, (x < z) | (y < z)),
        Rule("lt-max-both", z < pmax(x, y), (z < x) | (z < y)),
    ],
)
