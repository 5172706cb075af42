"""Inclusive integer intervals of index expressions, for access regions.

A deliberately small helper: it folds constants (through `tessel.ir.builders`) and keeps
expressions in the form `base + constant` so that neighbouring accesses merge, and it answers
"unknown" (None) instead of guessing. The full analyzer (`tessel.arith`) replaces it later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tessel.ir import builders
from tessel.ir.expr import (
    Add,
    Broadcast,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Ramp,
    Sub,
    Var,
)
from tessel.ir.functor import post_order
from tessel.ir.node import Node, field_names
from tessel.ir.substitute import substitute


@dataclass(frozen=True, slots=True)
class Interval:
    """The integers lo..hi, both inclusive; a point when lo is hi."""

    lo: PrimExpr
    hi: PrimExpr

    @staticmethod
    def point(value: PrimExpr) -> Interval:
        """The interval holding exactly `value`."""
        return Interval(value, value)

    @staticmethod
    def from_min_extent(min_value: PrimExpr, extent: PrimExpr) -> Interval:
        """min..min+extent-1 (a loop's or a range's values)."""
        return Interval(min_value, add_offset(add_exprs(min_value, extent), -1))

    @property
    def is_point(self) -> bool:
        return self.lo is self.hi or expr_equal(self.lo, self.hi)

    def extent(self) -> PrimExpr:
        """hi - lo + 1, exact when both ends share a base."""
        return add_offset(sub_exprs(self.hi, self.lo), 1)


# A variable bound to None ranges over values the helper could not bound.
VarBounds = Mapping[Var, "Interval | None"]


def expr_equal(a: object, b: object) -> bool:
    """Syntactic equality where variables and buffers compare by identity (free variables)."""
    if a is b:
        return True
    if isinstance(a, Node) and isinstance(b, Node):
        if type(a) is not type(b) or isinstance(a, Var) or hasattr(type(a), "structural_binding"):
            return False
        return all(expr_equal(getattr(a, n), getattr(b, n)) for n in field_names(type(a)))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(expr_equal, a, b))
    return type(a) is type(b) and a == b


# -- `base + constant` arithmetic ---------------------------------------------------------------


def split_offset(expr: PrimExpr) -> tuple[PrimExpr | None, int]:
    """(base, c) with expr == base + c; base None when expr is the constant c."""
    if isinstance(expr, IntImm):
        return None, expr.value
    if isinstance(expr, Add | Sub) and isinstance(expr.b, IntImm):
        base, offset = split_offset(expr.a)
        return base, offset + (expr.b.value if isinstance(expr, Add) else -expr.b.value)
    if isinstance(expr, Add) and isinstance(expr.a, IntImm):
        base, offset = split_offset(expr.b)
        return base, offset + expr.a.value
    return expr, 0


def join_offset(base: PrimExpr | None, offset: int, like: PrimExpr) -> PrimExpr:
    """base + offset in the dtype of `like` (written `base - c` for negative offsets)."""
    if base is None:
        return builders.const(offset, like.dtype)
    if offset < 0:
        return builders.sub(base, builders.const(-offset, base.dtype))
    return builders.add(base, builders.const(offset, base.dtype))


def add_offset(expr: PrimExpr, offset: int) -> PrimExpr:
    """expr + offset, merging into expr's own constant term."""
    base, own = split_offset(expr)
    return join_offset(base, own + offset, expr)


def add_exprs(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a + b with their constant terms gathered."""
    base_a, off_a = split_offset(a)
    base_b, off_b = split_offset(b)
    a, b = builders.match_types(a, b)
    if base_a is None or base_b is None:
        base = base_b if base_a is None else base_a
    else:
        base = builders.add(base_a, base_b)
    return join_offset(base, off_a + off_b, a)


def sub_exprs(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a - b with their constant terms gathered; equal bases cancel."""
    base_a, off_a = split_offset(a)
    base_b, off_b = split_offset(b)
    a, b = builders.match_types(a, b)
    if base_b is None or expr_equal(base_a, base_b):
        base = None if base_b is not None else base_a
    elif base_a is None:
        base = builders.neg(base_b)
    else:
        base = builders.sub(base_a, base_b)
    return join_offset(base, off_a - off_b, a)


def constant_extent(expr: PrimExpr) -> int | None:
    """The value of an extent that is constant once like terms cancel (`vi * 2 + 2 - vi * 2`
    is 2, as a region `A[vi * 2 : vi * 2 + 2]` spells it); None when it is not known."""
    if isinstance(expr, Sub):
        base_a, off_a = split_offset(expr.a)
        base_b, off_b = split_offset(expr.b)
        if (base_a is None and base_b is None) or expr_equal(base_a, base_b):
            return off_a - off_b
        return None
    base, offset = split_offset(expr)
    return offset if base is None else None


def _mul_const(expr: PrimExpr, factor: int) -> PrimExpr:
    base, offset = split_offset(expr)
    scaled = None if base is None else builders.mul(base, builders.const(factor, base.dtype))
    return join_offset(scaled, offset * factor, expr)


# -- hull of two bounds ------------------------------------------------------------------------


def _pick(a: PrimExpr, b: PrimExpr, take_min: bool) -> PrimExpr | None:
    """min(a, b) (or max) when decidable syntactically; None otherwise."""
    base_a, off_a = split_offset(a)
    base_b, off_b = split_offset(b)
    if not (base_a is base_b is None or expr_equal(base_a, base_b)):
        return None
    chosen = min(off_a, off_b) if take_min else max(off_a, off_b)
    return a if chosen == off_a else b


def union(a: Interval, b: Interval) -> Interval | None:
    """The hull of two intervals, or None when their ends are not comparable."""
    lo, hi = _pick(a.lo, b.lo, take_min=True), _pick(a.hi, b.hi, take_min=False)
    if lo is None or hi is None:
        return None
    return Interval(lo, hi)


# -- interval of an expression -----------------------------------------------------------------


def mentions(expr: Node, variables: VarBounds) -> bool:
    """True if `expr` uses a variable of `variables`."""
    return any(isinstance(n, Var) and n in variables for n in post_order(expr))


def eval_interval(expr: PrimExpr, bounds: VarBounds) -> Interval | None:
    """The values `expr` takes when each variable of `bounds` ranges over its interval.

    Variables not in `bounds` stay symbolic. None means the helper cannot tell.
    """
    if expr.dtype.is_vector and isinstance(expr, Ramp | Broadcast):
        return _HANDLERS[type(expr)](expr, bounds)  # a vector index covers all its lanes
    relaxed = _vars_in(expr, bounds)
    if all(_is_point(bounds[v]) for v in relaxed):
        points = {v: bounds[v].lo for v in relaxed}  # type: ignore[union-attr]  # all points
        return Interval.point(substitute(expr, points))
    if isinstance(expr, Var):
        return bounds[expr]
    handler = _HANDLERS.get(type(expr))
    return handler(expr, bounds) if handler is not None else None


def _vars_in(expr: PrimExpr, bounds: VarBounds) -> list[Var]:
    return [n for n in post_order(expr) if isinstance(n, Var) and n in bounds]


def _is_point(interval: Interval | None) -> bool:
    return interval is not None and interval.is_point


def _operands(expr: PrimExpr, bounds: VarBounds) -> tuple[Interval, Interval] | None:
    operands = expr.a, expr.b  # type: ignore[attr-defined]  # callers pass BinaryOps
    a, b = (eval_interval(operand, bounds) for operand in operands)
    return None if a is None or b is None else (a, b)


def _add(expr: Add, bounds: VarBounds) -> Interval | None:
    pair = _operands(expr, bounds)
    if pair is None:
        return None
    a, b = pair
    return Interval(add_exprs(a.lo, b.lo), add_exprs(a.hi, b.hi))


def _sub(expr: Sub, bounds: VarBounds) -> Interval | None:
    pair = _operands(expr, bounds)
    if pair is None:
        return None
    a, b = pair
    return Interval(sub_exprs(a.lo, b.hi), sub_exprs(a.hi, b.lo))


def _mul(expr: Mul, bounds: VarBounds) -> Interval | None:
    pair = _operands(expr, bounds)
    if pair is None:
        return None
    a, b = pair
    if not isinstance(b.lo, IntImm) or not b.is_point:
        if not (isinstance(a.lo, IntImm) and a.is_point):
            return None
        a, b = b, a
    factor = b.lo.value  # type: ignore[attr-defined]  # checked IntImm above
    lo, hi = _mul_const(a.lo, factor), _mul_const(a.hi, factor)
    return Interval(lo, hi) if factor >= 0 else Interval(hi, lo)


def _positive_divisor(expr: FloorDiv | FloorMod, bounds: VarBounds) -> int | None:
    divisor = expr.b
    if mentions(divisor, bounds) or not isinstance(divisor, IntImm) or divisor.value <= 0:
        return None
    return divisor.value


def _floordiv(expr: FloorDiv, bounds: VarBounds) -> Interval | None:
    divisor = _positive_divisor(expr, bounds)
    a = eval_interval(expr.a, bounds)
    if divisor is None or a is None:
        return None
    return Interval(builders.floordiv(a.lo, divisor), builders.floordiv(a.hi, divisor))


def _floormod(expr: FloorMod, bounds: VarBounds) -> Interval | None:
    divisor = _positive_divisor(expr, bounds)
    if divisor is None:
        return None
    zero = builders.const(0, expr.dtype)
    return Interval(zero, builders.const(divisor - 1, expr.dtype))


def _min_max(expr: Min | Max, bounds: VarBounds) -> Interval | None:
    pair = _operands(expr, bounds)
    if pair is None:
        return None
    a, b = pair
    build = builders.min_value if isinstance(expr, Min) else builders.max_value
    return Interval(build(a.lo, b.lo), build(a.hi, b.hi))


def _cast(expr: Cast, bounds: VarBounds) -> Interval | None:
    inner = eval_interval(expr.value, bounds)
    if inner is None or not (expr.dtype.is_integer and expr.value.dtype.is_integer):
        return None
    if expr.dtype.bits < expr.value.dtype.bits:
        return None  # narrowing may wrap, so the bounds would not hold
    return Interval(builders.cast(inner.lo, expr.dtype), builders.cast(inner.hi, expr.dtype))


def _ramp(expr: Ramp, bounds: VarBounds) -> Interval | None:
    base = eval_interval(expr.base, bounds)
    if base is None or mentions(expr.stride, bounds) or not isinstance(expr.stride, IntImm):
        return None
    span = expr.stride.value * (expr.lanes - 1)
    return Interval(add_offset(base.lo, min(span, 0)), add_offset(base.hi, max(span, 0)))


def _broadcast(expr: Broadcast, bounds: VarBounds) -> Interval | None:
    return eval_interval(expr.value, bounds)


_HANDLERS = {
    Add: _add,
    Sub: _sub,
    Mul: _mul,
    FloorDiv: _floordiv,
    FloorMod: _floormod,
    Min: _min_max,
    Max: _min_max,
    Cast: _cast,
    Ramp: _ramp,
    Broadcast: _broadcast,
}
