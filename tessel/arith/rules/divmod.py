"""Floor division and modulo of divisions and modulos (sums are handled in sum_rules)."""

from tessel.arith.pattern import PConst, PNode, PVar
from tessel.arith.rule import Rule, RuleSet
from tessel.ir.expr import Div, Mod

x, y = PVar("x"), PVar("y")
c1, c2 = PConst("c1"), PConst("c2")

DIVMOD_RULES = RuleSet(
    "divmod",
    [
        Rule(
            "floordiv-floordiv",
            (x // c1) // c2,
            x // (c1 * c2),
            when=lambda m: m.c1 > 0 and m.c2 > 0,
        ),
        Rule(
            "floormod-floormod-multiple",
            (x % c1) % c2,
            x % c2,
            when=lambda m: m.c2 > 0 and m.c1 % m.c2 == 0,
        ),
        Rule(
            "floormod-floormod-inner-smaller",
            (x % c1) % c2,
            x % c1,
            when=lambda m: 0 < m.c1 <= m.c2,
        ),
        Rule(
            "floormod-of-floordiv-small",
            (x // c1) % c2,
            x // c1,
            when=lambda m: m.c1 > 0 and m.c2 > 0 and m.below(m.x, m.c1 * m.c2),
        ),
        # TVM's canonical form of a middle digit: the bits below c1 * c2, then shifted by c1.
        Rule(
            "floormod-of-floordiv",
            (x // c1) % c2,
            (x % (c1 * c2)) // c1,
            when=lambda m: m.c1 > 0 and m.c2 > 0,
        ),
        Rule("floordiv-self", x // x, 1, when=lambda m: m.can_prove(m.x != 0)),
        Rule("floormod-self", x % x, 0, when=lambda m: m.can_prove(m.x != 0)),
        Rule("floordiv-zero-numerator", 0 // x, 0, when=lambda m: m.can_prove(m.x != 0)),
        Rule("floormod-by-one", x % 1, 0),
        Rule(
            "floormod-of-multiple", (x * c1) % c2, 0, when=lambda m: m.c2 != 0 and m.c1 % m.c2 == 0
        ),
        Rule(
            "floordiv-exact-multiple",
            (x * c1) // c2,
            x * (c1 // c2),
            when=lambda m: m.c2 != 0 and m.c1 % m.c2 == 0,
        ),
        # C-style division equals floor division when the dividend is nonnegative.
        Rule(
            "truncdiv-nonnegative",
            PNode(Div, (x, c1)),
            x // c1,
            when=lambda m: m.c1 > 0 and m.nonnegative(m.x),
        ),
        Rule(
            "truncmod-nonnegative",
            PNode(Mod, (x, c1)),
            x % c1,
            when=lambda m: m.c1 > 0 and m.nonnegative(m.x),
        ),
    ],
)
