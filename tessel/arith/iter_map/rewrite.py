"""Rewriting index expressions into iterator sums: `+ - *` by invariants, `//` and `%` by constants.

Each input iterator becomes a split of its own mark; sums and scaled terms stay sums; `x // c` and
`x % c` take digits of the (fused) iterator `x`, which must divide evenly (no padding).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tessel.arith.iter_map.expr import (
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    NotIterMapError,
    full_split,
)
from tessel.arith.iter_map.fuse import Fuser
from tessel.arith.iter_map.proof import Prover
from tessel.ir import builders
from tessel.ir.expr import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, Range, Sub, Var
from tessel.ir.functor import post_order


class IterMapRewriter:
    """Turns expressions over the input iterators into IterSumExprs (raises NotIterMapError)."""

    def __init__(
        self,
        input_iters: Mapping[Var, Range],
        prover: Prover,
        simplify_trivial_iterators: bool = True,
    ) -> None:
        self.prover = prover
        self.simplify_trivial = simplify_trivial_iterators
        self.fuser = Fuser(prover)
        self.var_map: dict[Var, IterSumExpr] = {}
        self.input_marks: list[IterMark] = []
        for var, dom in input_iters.items():
            self._add_input(var, dom)

    def _add_input(self, var: Var, dom: Range) -> None:
        if self.simplify_trivial and builders.is_const_int(dom.extent, 1):  # its minimum
            self.var_map[var] = IterSumExpr((), builders.cast(dom.min, var.dtype))
            return
        mark = IterMark(builders.sub(var, dom.min), dom.extent)
        self.input_marks.append(mark)
        base = builders.cast(dom.min, var.dtype)
        self.var_map[var] = IterSumExpr((full_split(mark),), base)

    def rewrite(self, index: PrimExpr) -> IterSumExpr:
        """`index` as a constant, or one split (fused when needed) plus a base."""
        return self.fuser.fuse(self.visit(index))

    def rewrite_constraint(
        self, expr: PrimExpr, lower: PrimExpr | None, upper: PrimExpr | None
    ) -> None:
        """Narrow the iterator `expr` fuses into to [lower, upper)."""
        total = self.visit(expr)
        if not total.args:
            raise NotIterMapError(f"the predicate bounds `{expr}`, which uses no iterator")
        self.fuser.constrain(total, lower, upper)

    def visit(self, expr: PrimExpr) -> IterSumExpr:
        """`expr` as a sum of splits plus a base (not yet fused)."""
        method = _VISITORS.get(type(expr))
        if method is not None:
            return method(self, expr)
        if isinstance(expr, Var):
            return self.visit_var(expr)
        if self._uses_iterators(expr):
            raise NotIterMapError(f"`{expr}` is not affine in the iterators")
        return IterSumExpr((), expr)

    def visit_var(self, var: Var) -> IterSumExpr:
        return self.var_map.get(var) or IterSumExpr((), var)

    def visit_leaf(self, expr: PrimExpr) -> IterSumExpr:
        return IterSumExpr((), expr)

    def visit_add(self, expr: Add) -> IterSumExpr:
        return add_sums(self.visit(expr.a), self.visit(expr.b), 1, self.prover)

    def visit_sub(self, expr: Sub) -> IterSumExpr:
        return add_sums(self.visit(expr.a), self.visit(expr.b), -1, self.prover)

    def visit_mul(self, expr: Mul) -> IterSumExpr:
        a, b = self.visit(expr.a), self.visit(expr.b)
        if a.args and b.args:
            raise NotIterMapError(f"`{expr}` is not affine in the iterators")
        if not a.args and not b.args:
            return IterSumExpr((), builders.mul(a.base, b.base))
        return scale_sum(a, b.base) if a.args else scale_sum(b, a.base)

    def visit_floordiv(self, expr: FloorDiv) -> IterSumExpr:
        dividend, divisor = self._division_operands(expr)
        if not dividend.args:
            return IterSumExpr((), builders.floordiv(dividend.base, divisor))
        split, base = _only_split(self.fuser.fuse(dividend))
        scale = split.scale
        if builders.is_const_int(divisor, 1):
            return IterSumExpr((split,), base)
        if self.prover.divisible(scale, divisor):  # (x*s*d + b) // d = x*s + b // d
            quotient = self.prover.quotient(scale, divisor)
            return IterSumExpr((_rescaled(split, quotient),), builders.floordiv(base, divisor))
        divisor, base = self._unscaled(split, divisor, base, expr)
        self._check_offset(base, divisor, expr)
        digit = self._digit_div(split, divisor, expr)
        quotient_base = self.prover.quotient(base, divisor)
        return IterSumExpr(() if digit is None else (digit,), quotient_base)

    def visit_floormod(self, expr: FloorMod) -> IterSumExpr:
        dividend, divisor = self._division_operands(expr)
        if not dividend.args:
            return IterSumExpr((), builders.floormod(dividend.base, divisor))
        split, base = _only_split(self.fuser.fuse(dividend))
        scale = split.scale
        if self.prover.divisible(scale, divisor):  # (x*s*d + b) % d = b % d
            return IterSumExpr((), builders.floormod(base, divisor))
        # (x*s + b) % (s*d) = ((x + b // s) % d) * s + b % s
        low = builders.floormod(base, scale)
        divisor, base = self._unscaled(split, divisor, base, expr)
        self._check_offset(base, divisor, expr)
        digit = self._digit_mod(split, divisor, expr)
        return IterSumExpr((_rescaled(digit, scale),), self.prover.simplify(low))

    def _division_operands(self, expr: FloorDiv | FloorMod) -> tuple[IterSumExpr, PrimExpr]:
        """The visited dividend and the divisor, which must not depend on the iterators."""
        dividend, divisor = self.visit(expr.a), self.visit(expr.b)
        if divisor.args:
            raise NotIterMapError(f"`{expr}` divides by `{expr.b}`, which depends on the iterators")
        if dividend.args and not self.prover.positive(divisor.base):
            raise NotIterMapError(
                f"`{expr}` divides by `{expr.b}`, which is not known to be positive"
            )
        return dividend, divisor.base

    def _unscaled(
        self, split: IterSplitExpr, divisor: PrimExpr, base: PrimExpr, expr: PrimExpr
    ) -> tuple[PrimExpr, PrimExpr]:
        """Divide the scale out: (x*s + b) // (s*d) is (x + b // s) // d; same digit for `%`."""
        scale = split.scale
        if builders.is_const_int(scale, 1):
            return divisor, base
        if not (self.prover.positive(scale) and self.prover.divisible(divisor, scale)):
            raise NotIterMapError(
                f"`{expr}`: the scale {scale} of `{split}` and the divisor {divisor} "
                "do not divide one another"
            )
        return self.prover.quotient(divisor, scale), builders.floordiv(base, scale)

    def _check_offset(self, base: PrimExpr, divisor: PrimExpr, expr: PrimExpr) -> None:
        if not self.prover.divisible(base, divisor):
            raise NotIterMapError(
                f"`{expr}`: the offset {base} is not a multiple of the divisor {divisor}"
            )

    def _digit_div(
        self, split: IterSplitExpr, divisor: PrimExpr, expr: PrimExpr
    ) -> IterSplitExpr | None:
        """`split // divisor` for a split of scale one (None when it is always zero)."""
        if self.prover.divisible(split.extent, divisor):
            extent = self.prover.quotient(split.extent, divisor)
            lower_factor = builders.mul(split.lower_factor, divisor)
            return IterSplitExpr(split.source, lower_factor, extent, split.scale)
        if self.prover.prove(builders.le(split.extent, divisor)):
            return None
        raise _not_dividing(split, divisor, expr)

    def _digit_mod(self, split: IterSplitExpr, divisor: PrimExpr, expr: PrimExpr) -> IterSplitExpr:
        """`split % divisor` for a split of scale one."""
        if self.prover.divisible(split.extent, divisor):
            return IterSplitExpr(split.source, split.lower_factor, divisor, split.scale)
        if self.prover.prove(builders.le(split.extent, divisor)):
            return split
        raise _not_dividing(split, divisor, expr)

    def _uses_iterators(self, expr: PrimExpr) -> bool:
        return any(isinstance(node, Var) and node in self.var_map for node in post_order(expr))


_VISITORS: dict[type, Callable[..., IterSumExpr]] = {
    IntImm: IterMapRewriter.visit_leaf,
    Add: IterMapRewriter.visit_add,
    Sub: IterMapRewriter.visit_sub,
    Mul: IterMapRewriter.visit_mul,
    FloorDiv: IterMapRewriter.visit_floordiv,
    FloorMod: IterMapRewriter.visit_floormod,
}


def _not_dividing(split: IterSplitExpr, divisor: PrimExpr, expr: PrimExpr) -> NotIterMapError:
    return NotIterMapError(
        f"`{expr}`: the divisor {divisor} does not divide extent {split.extent} of `{split}`"
    )


def _only_split(total: IterSumExpr) -> tuple[IterSplitExpr, PrimExpr]:
    assert len(total.args) == 1  # a fused non-constant sum has exactly one split
    return total.args[0], total.base


def _rescaled(split: IterSplitExpr, factor: PrimExpr) -> IterSplitExpr:
    scale = (
        builders.mul(split.scale, factor) if not builders.is_const_int(factor, 1) else split.scale
    )
    return IterSplitExpr(split.source, split.lower_factor, split.extent, scale)


def add_sums(a: IterSumExpr, b: IterSumExpr, sign: int, prover: Prover) -> IterSumExpr:
    """a + sign * b, merging terms that are the same digit of the same mark."""
    args = list(a.args)
    for split in b.args:
        scale = split.scale if sign > 0 else builders.neg(split.scale)
        _add_term(
            args, IterSplitExpr(split.source, split.lower_factor, split.extent, scale), prover
        )
    base = builders.add(a.base, b.base) if sign > 0 else builders.sub(a.base, b.base)
    return IterSumExpr(tuple(args), base)


def _add_term(args: list[IterSplitExpr], term: IterSplitExpr, prover: Prover) -> None:
    for position, arg in enumerate(args):
        if (
            arg.source is term.source
            and prover.equal(arg.lower_factor, term.lower_factor)
            and prover.equal(arg.extent, term.extent)
        ):
            scale = prover.simplify(builders.add(arg.scale, term.scale))
            if builders.is_const_int(scale, 0):
                del args[position]
            else:
                args[position] = IterSplitExpr(arg.source, arg.lower_factor, arg.extent, scale)
            return
    args.append(term)


def scale_sum(total: IterSumExpr, factor: PrimExpr) -> IterSumExpr:
    """total * factor, for a factor that does not depend on the iterators."""
    if builders.is_const_int(factor, 0):
        return IterSumExpr((), builders.mul(total.base, factor))
    args = tuple(_rescaled(arg, factor) for arg in total.args)
    return IterSumExpr(args, builders.mul(total.base, factor))
