"""Boolean algebra: and/or/not of comparisons and of each other."""

from tessel.arith.pattern import PConst, PVar
from tessel.arith.rule import Rule, RuleSet

x, y, a, b = PVar("x"), PVar("y"), PVar("a"), PVar("b")
c1, c2 = PConst("c1"), PConst("c2")

LOGICAL_RULES = RuleSet(
    "logical",
    [
        Rule("and-self", a & a, a),
        Rule("or-self", a | a, a),
        Rule("and-not-self", a & ~a, False),
        Rule("or-not-self", a | ~a, True),
        Rule("not-not", ~~a, a),
        Rule("not-lt", ~(x < y), y <= x),
        Rule("not-le", ~(x <= y), y < x),
        Rule("not-eq", ~(x.eq(y)), x.ne(y)),
        Rule("not-ne", ~(x.ne(y)), x.eq(y)),
        Rule("not-and", ~(a & b), ~a | ~b),
        Rule("not-or", ~(a | b), ~a & ~b),
        Rule("and-absorb-or", a & (a | b), a),
        Rule("or-absorb-and", a | (a & b), a),
        Rule("and-lt-const-empty", (x < c1) & (c2 < x), False, when=lambda m: m.c1 <= m.c2 + 1),
        Rule("and-lt-const-tighter", (x < c1) & (x < c2), x < c1, when=lambda m: m.c1 <= m.c2),
        Rule("or-lt-const-looser", (x < c1) | (x < c2), x < c2, when=lambda m: m.c1 <= m.c2),
    ],
)
