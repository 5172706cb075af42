"""The questions iterator-map detection asks: equal, divisible, provable; constants answer first."""

from __future__ import annotations

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map.expr import same_value
from tessel.ir import builders
from tessel.ir.expr import IntImm, Mul, PrimExpr


class Prover:
    """Answers exactly for constants and asks the analyzer otherwise (False means not proven)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        """`a == b` always."""
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return a.value == b.value
        return same_value(a, b) or self.analyzer.can_prove_equal(a, b)

    def divisible(self, a: PrimExpr, b: PrimExpr) -> bool:
        """`b` divides `a` (b nonzero)."""
        if isinstance(b, IntImm) and b.value == 0:
            return False
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return a.value % b.value == 0
        if builders.is_const_int(b, 1) or builders.is_const_int(a, 0) or self.equal(a, b):
            return True
        if _without_factor(a, b) is not None:
            return True
        return self.prove(builders.eq(builders.floormod(a, b), 0))

    def prove(self, condition: PrimExpr) -> bool:
        """`condition` holds."""
        if isinstance(condition, IntImm):
            return bool(condition.value)
        return self.analyzer.can_prove(condition)

    def positive(self, value: PrimExpr) -> bool:
        """`value > 0`."""
        return self.prove(builders.gt(value, 0))

    def quotient(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        """`a // b` for a known multiple, simplified."""
        if builders.is_const_int(b, 1):
            return a
        if self.equal(a, b):
            return builders.const(1, a.dtype)
        rest = _without_factor(a, b)
        if rest is not None:
            return self.simplify(rest)
        return self.simplify(builders.floordiv(a, b))

    def simplify(self, value: PrimExpr) -> PrimExpr:
        """`value` simplified (constants are already folded by the builders)."""
        return value if isinstance(value, IntImm) else self.analyzer.simplify(value)


def _without_factor(product: PrimExpr, factor: PrimExpr) -> PrimExpr | None:
    """`product / factor` when `factor` is literally one factor of the product `product` (a
    symbolic extent `16 * n` split by `n`, which the simplifier does not reduce), else None."""
    if not isinstance(product, Mul):
        return None
    if same_value(product.b, factor):
        return product.a
    if same_value(product.a, factor):
        return product.b
    for side, other in ((product.a, product.b), (product.b, product.a)):
        rest = _without_factor(side, factor)
        if rest is not None:
            return builders.mul(rest, other)
    return None
