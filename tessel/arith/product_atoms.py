"""Proofs with products of variables taken as atoms: a fact such as
`(b * s + 7) // 8 * 8 >= b * s` holds for every value of `b * s`, so it is proved by
replacing the product with one fresh variable over the product's bounds, where the rules that
prove `(n + 7) // 8 * 8 >= n` apply. Symbolic shapes (a model's batch * seq rows) need it; the
analyzer's rules match a variable, not a product."""

from __future__ import annotations

from tessel.arith.analyzer import Analyzer
from tessel.ir.expr import IntImm, Mul, PrimExpr, Range, SizeVar, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.structural import same_expr


def can_prove_with_product_atoms(analyzer: Analyzer, condition: PrimExpr) -> bool:
    """`analyzer.can_prove(condition)`, or else the same with each product of two non-constant
    factors replaced by a fresh variable ranging over the product's bounds (sound: a fact
    true for every value in the range is true for the product)."""
    if analyzer.can_prove(condition):
        return True
    products = _products(analyzer, condition)
    bounds = [analyzer.const_int_bound(product) for product in products]
    if not products or any(not isinstance(bound.min_value, int) for bound in bounds):
        return False  # no product, or one of unknown sign: nothing to say of it
    # A non-negative product is a size variable, which the analyzer's rules know to be >= 0.
    atoms = [
        (product, (SizeVar if bound.min_value >= 0 else Var)(f"product{k}", product.dtype))
        for k, (product, bound) in enumerate(zip(products, bounds, strict=True))
    ]
    abstracted = _Abstract(atoms, analyzer).visit(condition)
    # A fresh analyzer: the loop variables' ranges, the atoms', nothing derived about products.
    fresh = Analyzer()
    for node in post_order(abstracted):
        if isinstance(node, Var) and analyzer.bound_range(node) is not None:
            fresh.bind(node, analyzer.bound_range(node), allow_override=True)
    for (_, atom), bound in zip(atoms, bounds, strict=True):
        high = bound.max_value
        if isinstance(high, int) and high - bound.min_value < atom.dtype.max_value():
            extent = IntImm(atom.dtype, high - bound.min_value + 1)
            fresh.bind(atom, Range(IntImm(atom.dtype, bound.min_value), extent))
        else:  # bounded above only by its type: what the proof needs is its lower bound
            fresh.assume(atom >= bound.min_value)
    return fresh.can_prove(abstracted)


def _products(analyzer: Analyzer, condition: PrimExpr) -> list[PrimExpr]:
    """The products of two non-constant factors in `condition`, simplified, each once (`b * s`
    and `s * b` are one)."""
    products: list[PrimExpr] = []
    for node in post_order(condition):
        if isinstance(node, Mul) and not isinstance(node.a, IntImm):
            if isinstance(node.b, IntImm):
                continue
            canonical = analyzer.simplify(node)
            if not any(same_expr(canonical, p) for p in products):
                products.append(canonical)
    return products


class _Abstract(Mutator):
    """Each product (simplified, structurally equal to one of `atoms`) replaced by its
    variable."""

    def __init__(self, atoms: list[tuple[PrimExpr, Var]], analyzer: Analyzer) -> None:
        super().__init__()
        self.atoms, self.analyzer = atoms, analyzer

    def visit_Mul(self, node: Mul) -> PrimExpr:
        canonical = self.analyzer.simplify(node)
        for product, atom in self.atoms:
            if same_expr(canonical, product):
                return atom
        return self.generic_visit(node)


__all__ = ["can_prove_with_product_atoms"]
