"""Rules that act on canonical sums: div/mod pairs joining, multiples leaving `//` and `%`,
comparisons normalised and decided by bounds and facts.

A pattern cannot say "some term of this sum", so these rules are functions over `Sum`s; each one
fires under the name of a declarative law in `SUM_LAWS`, which the generic law test checks like
every other rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.arith.canonical import Sum, coefficient_gcd, from_sum, le_zero_form, sum_fits, to_sum
from tessel.arith.pattern import PConst, PVar
from tessel.arith.rule import Rule, RuleSet
from tessel.ir import builders
from tessel.ir.expr import EQ, GE, LE, NE, CmpOp, FloorDiv, FloorMod, IntImm, PrimExpr
from tessel.ir.structural import same_expr

if TYPE_CHECKING:
    from tessel.arith.rewrite import Rewriter

x, y = PVar("x"), PVar("y")
c1, c2 = PConst("c1"), PConst("c2")

SUM_LAWS = RuleSet(
    "sum",
    [
        Rule("floordiv-mod-join", (x // c1) * c1 + x % c1, x, when=lambda m: m.c1 > 0),
        Rule(
            "floordiv-join",
            (x // (c1 * c2)) * c2 + (x % (c1 * c2)) // c1,
            x // c1,
            when=lambda m: m.c1 > 0 and m.c2 > 0,
        ),
        Rule(
            "floormod-join",
            ((x % (c1 * c2)) // c1) * c1 + x % c1,
            x % (c1 * c2),
            when=lambda m: m.c1 > 0 and m.c2 > 0,
        ),
        Rule("floormod-from-floordiv", x - (x // c1) * c1, x % c1, when=lambda m: m.c1 > 0),
        Rule("floordiv-from-floormod", x - x % c1, (x // c1) * c1, when=lambda m: m.c1 > 0),
        Rule("floordiv-split-multiple", (x * c1 + y) // c1, x + y // c1, when=lambda m: m.c1 != 0),
        # A value whose bounds lie in one period [x*c1, (x+1)*c1): the code reads x off the bounds.
        Rule("floordiv-by-bound", (x * c1 + y) // c1, x, when=lambda m: m.below(m.y, m.c1)),
        Rule(
            "floordiv-scale-down",
            (x * c1 + y) // (c1 * c2),
            x // c2,
            when=lambda m: m.below(m.y, m.c1) and m.c2 > 0,
        ),
        Rule("floormod-drop-multiple", (x * c1 + y) % c1, y % c1, when=lambda m: m.c1 != 0),
        Rule("floormod-by-bound", (x * c1 + y) % c1, y, when=lambda m: m.below(m.y, m.c1)),
        Rule(
            "floormod-scale-down",
            (x * c1 + y) % (c1 * c2),
            (x % c2) * c1 + y,
            when=lambda m: m.below(m.y, m.c1) and m.c2 > 0,
        ),
        # Comparisons are statements about `x - y`: decided by its bounds, or divided by the gcd.
        Rule("sum-collect-terms", x * c1 + y + x * c2, x * (c1 + c2) + y),
        Rule("cmp-by-bound", x < y, 1, when=lambda m: m.bound(m.x - m.y).max_value < 0),
        Rule("cmp-normalize", x * c1 < c2, x < (c2 - 1) // c1 + 1, when=lambda m: m.c1 > 0),
    ],
)


def _period(bound: object, c: int) -> int | None:
    """k when the bound lies within [k*c, (k+1)*c), else None (also when unbounded)."""
    lo, hi = bound.min_value, bound.max_value  # type: ignore[attr-defined]  # a ConstIntBound
    if isinstance(lo, float) or isinstance(hi, float) or lo // c != hi // c:
        return None
    return lo // c


def simplify_with_sums(node: PrimExpr, rewriter: Rewriter) -> PrimExpr:
    """A simpler equal expression for a floordiv/floormod by a constant or a comparison, or
    `node`."""
    if isinstance(node, CmpOp):
        return _compare(node, rewriter)
    divisor = node.b
    if not isinstance(divisor, IntImm) or divisor.value <= 0:
        return node
    total = to_sum(node.a, rewriter.table, rewriter.visit)
    if isinstance(node, FloorDiv):
        return _floordiv(node, total, divisor.value, rewriter)
    return _floormod(node, total, divisor.value, rewriter)


def _split_multiples(total: Sum, c: int) -> tuple[Sum, Sum]:
    """(quotient, rest) with total == c * quotient + rest; terms divisible by c go to quotient."""
    quotient, rest = Sum({}), Sum({}, total.constant)
    for monomial, coeff in total.items():
        if coeff % c == 0:
            quotient.terms[monomial] = coeff // c
        else:
            rest.terms[monomial] = coeff
    return quotient, rest


def _fire(rewriter: Rewriter, name: str, before: PrimExpr, after: PrimExpr) -> PrimExpr:
    rewriter.fired(name, before, after)
    return after


def _floordiv(node: FloorDiv, total: Sum, c: int, rewriter: Rewriter) -> PrimExpr:
    dtype, table = node.dtype, rewriter.table
    quotient, rest = _split_multiples(total, c)
    period = _period(rewriter.analyzer.sum_bound(rest), c)
    if period is not None:
        q = Sum.of_constant(period)
        return _fire(rewriter, "floordiv-by-bound", node, from_sum(quotient.add(q), table, dtype))
    quotient.constant, rest.constant = rest.constant // c, rest.constant % c
    if quotient.terms or quotient.constant:
        rest_expr = from_sum(rest, table, dtype)
        after = builders.add(from_sum(quotient, table, dtype), builders.floordiv(rest_expr, c))
        return _fire(rewriter, "floordiv-split-multiple", node, after)
    split = _scale_down(rest, c, rewriter)
    if split is not None:
        g, big, _ = split
        after = builders.floordiv(from_sum(big, table, dtype), c // g)
        return _fire(rewriter, "floordiv-scale-down", node, after)
    return node


def _floormod(node: FloorMod, total: Sum, c: int, rewriter: Rewriter) -> PrimExpr:
    dtype, table = node.dtype, rewriter.table
    _, rest = _split_multiples(total, c)
    rest.constant %= c
    rest_expr = from_sum(rest, table, dtype)
    period = _period(rewriter.analyzer.sum_bound(rest), c)
    if period is not None:
        after = builders.sub(rest_expr, period * c)
        return _fire(rewriter, "floormod-by-bound", node, after)
    if rest.terms != total.terms or rest.constant != total.constant:
        return _fire(rewriter, "floormod-drop-multiple", node, builders.floormod(rest_expr, c))
    split = _scale_down(rest, c, rewriter)
    if split is not None:
        g, big, small = split
        scaled = builders.mul(builders.floormod(from_sum(big, table, dtype), c // g), g)
        after = builders.add(scaled, from_sum(small, table, dtype))
        return _fire(rewriter, "floormod-scale-down", node, after)
    return node


def _scale_down(rest: Sum, c: int, rewriter: Rewriter) -> tuple[int, Sum, Sum] | None:
    """(g, big, small) with rest == g*big + small, 0 <= small < g and g a divisor of c (g > 1,
    the largest that works): then rest // c == big // (c/g) and rest % c == big % (c/g) * g + small.
    """
    for g in _divisors_descending(c):
        big = Sum({m: k // g for m, k in rest.items() if k % g == 0}, rest.constant // g)
        small = Sum({m: k for m, k in rest.items() if k % g != 0}, rest.constant % g)
        if not big.terms or not small.terms and not small.constant and g == c:
            continue
        bound = rewriter.analyzer.sum_bound(small)
        if bound.min_value >= 0 and bound.max_value < g:
            return g, big, small
    return None


def _divisors_descending(c: int) -> list[int]:
    """The divisors of c greater than 1, largest first (c is a positive constant)."""
    small = [d for d in range(2, int(c**0.5) + 1) if c % d == 0]
    return sorted({c, *small, *(c // d for d in small)}, reverse=True) if c > 1 else []


# ---------------------------------------------------------------------------- div/mod joining
def join_div_mod(total: Sum, rewriter: Rewriter) -> Sum:
    """Join `(x // c) * c * k + (x % c) * k` (and the nested forms) inside a sum, repeatedly."""
    changed = True
    while changed:
        changed = False
        for monomial, coeff in list(total.items()):
            if monomial not in total.terms:
                continue
            if _try_join(total, monomial, coeff, rewriter) or _try_complement(
                total, monomial, coeff, rewriter
            ):
                changed = True
    return total


def _try_complement(total: Sum, monomial: tuple[int, ...], coeff: int, rewriter: Rewriter) -> bool:
    """`k*x - k*c*(x // c)` -> `k*(x % c)`, and `k*x - k*(x % c)` -> `k*c*(x // c)`, for an
    atom x."""
    atom = _single(monomial, rewriter)
    if not (
        isinstance(atom, FloorDiv | FloorMod) and isinstance(atom.b, IntImm) and atom.b.value > 0
    ):
        return False
    c = atom.b.value
    x_id = rewriter.table.intern(atom.a)
    k = total.terms.get((x_id,))
    if k is None:
        return False
    is_div = isinstance(atom, FloorDiv)
    if coeff != (-k * c if is_div else -k):
        return False
    before = from_sum(total, rewriter.table, atom.dtype)
    del total.terms[monomial]
    del total.terms[(x_id,)]
    other = builders.floormod(atom.a, c) if is_div else builders.floordiv(atom.a, c)
    total.add_term((rewriter.table.intern(other),), k if is_div else k * c)
    name = "floormod-from-floordiv" if is_div else "floordiv-from-floormod"
    rewriter.fired(name, before, from_sum(total, rewriter.table, atom.dtype))
    return True


def _single(monomial: tuple[int, ...], rewriter: Rewriter) -> PrimExpr | None:
    return rewriter.table.atoms[monomial[0]] if len(monomial) == 1 else None


def _try_join(total: Sum, low_monomial: tuple[int, ...], k: int, rewriter: Rewriter) -> bool:
    """`low_monomial` is a digit with an upper bound (`x % u` or `x % u // l`): look for the
    digit just above it (coefficient k times the ratio of their lower factors) and join them."""
    low = _digit(_single(low_monomial, rewriter))
    if low is None or low[2] is None:
        return False
    source, low_lower, low_upper = low
    for monomial, coeff in list(total.items()):
        if monomial == low_monomial:
            continue
        high = _digit(_single(monomial, rewriter))
        if high is None or high[1] != low_upper or not same_expr(high[0], source):
            continue
        if coeff != k * (low_upper // low_lower):
            continue
        joined = _digit_expr(source, low_lower, high[2])
        before = from_sum(total, rewriter.table, joined.dtype)
        del total.terms[low_monomial]
        del total.terms[monomial]
        total.add(to_sum(joined, rewriter.table, rewriter.visit), k)
        after = from_sum(total, rewriter.table, joined.dtype)
        rewriter.fired(_join_name(low_lower, high[2]), before, after)
        return True
    return False


def _digit(atom: PrimExpr | None) -> tuple[PrimExpr, int, int | None] | None:
    """(x, l, u) for an atom `x % u // l` (TVM's split of x between the factors l and u; u None
    for no upper bound), in any of its spellings: `x // l`, `x % u`, `x // l % m`."""
    if not isinstance(atom, FloorDiv | FloorMod) or not _positive_const(atom.b):
        return None
    c = atom.b.value
    inner = atom.a
    if isinstance(atom, FloorMod):
        if isinstance(inner, FloorDiv) and _positive_const(inner.b):  # x // l % m
            return inner.a, inner.b.value, inner.b.value * c
        return inner, 1, c
    if isinstance(inner, FloorMod) and _positive_const(inner.b) and inner.b.value % c == 0:
        return inner.a, c, inner.b.value  # x % u // l
    return inner, c, None


def _positive_const(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value > 0


def _digit_expr(source: PrimExpr, lower: int, upper: int | None) -> PrimExpr:
    """The digit (x, l, u) in TVM's canonical spelling `x % u // l`, leaving out unit parts."""
    result = source if upper is None else builders.floormod(source, upper)
    return result if lower == 1 else builders.floordiv(result, lower)


def _join_name(lower: int, upper: int | None) -> str:
    """The law a join applies: to the whole value, to a quotient, or to a remainder."""
    if upper is not None:
        return "floormod-join"
    return "floordiv-mod-join" if lower == 1 else "floordiv-join"


# ---------------------------------------------------------------------------- comparisons
def _compare(node: CmpOp, rewriter: Rewriter) -> PrimExpr:
    table = rewriter.table
    a, b = (to_sum(side, table, rewriter.visit) for side in (node.a, node.b))
    diff = join_div_mod(a.copy().add(b, -1), rewriter)  # the comparison is about a - b
    if not sum_fits(diff, node.a.dtype):
        return node
    decided = rewriter.analyzer.decide_comparison(type(node), diff)
    if decided is not None:
        return _fire(rewriter, "cmp-by-bound", node, builders.const(decided, "bool"))
    normal = _normal_form(node, diff, rewriter)
    if normal is None or same_expr(normal, node):
        return node
    return _fire(rewriter, "cmp-normalize", node, normal)


def _normal_form(node: CmpOp, diff: Sum, rewriter: Rewriter) -> PrimExpr | None:
    """`P OP N + K` with positive terms left, the gcd divided out, like `i < n` or `3 <= x`."""
    dtype, table = node.a.dtype, rewriter.table
    if isinstance(node, EQ | NE):
        g = coefficient_gcd(diff)
        terms = Sum({m: k // g for m, k in diff.items()})
        bound = -diff.constant // g
        make = builders.eq if isinstance(node, EQ) else builders.ne
    else:
        s = le_zero_form(type(node), diff)  # g*T + k <= 0  <=>  T <= floor(-k / g)
        g = coefficient_gcd(s)
        terms = Sum({m: k // g for m, k in s.items()})
        bound = -s.constant // g
        make = builders.le if isinstance(node, LE | GE) else builders.lt
        if make is builders.lt:
            bound += 1
    positive = Sum({m: k for m, k in terms.items() if k > 0})
    negative = Sum({m: -k for m, k in terms.items() if k < 0}, bound)
    if not positive.terms:  # 0 OP N + K  ->  -K OP N
        return make(builders.const(-bound, dtype), from_sum(Sum(negative.terms), table, dtype))
    return make(from_sum(positive, table, dtype), from_sum(negative, table, dtype))
