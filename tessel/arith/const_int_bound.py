"""Constant integer bounds of integer expressions (TVM's ConstIntBoundAnalyzer).

Results are sound under the no-overflow assumption TVM's analyzer makes: every result is clamped
to its dtype's range, so an expression that actually wraps around may leave its bound. Explicit
casts are the exception: a cast whose operand may not fit gives the target's whole range.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from tessel.arith.expr_walk import is_if_then_else, lookup_by_mro, walk_children_first
from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    Call,
    Cast,
    CmpOp,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    SizeVar,
    Sub,
    Var,
)
from tessel.support.dtype import DataType

NEG_INF = -math.inf
POS_INF = math.inf


def _as_end(value: Any, is_lower: bool) -> int | float:
    """An end point as an int or a float infinity; nan (inf - inf) widens that side."""
    if type(value) is int:
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return NEG_INF if is_lower else POS_INF
        if math.isinf(value):
            return value
        return math.ceil(value) if is_lower else math.floor(value)
    return int(value)


@dataclass(frozen=True, slots=True)
class ConstIntBound:
    """Inclusive integer bounds [min_value, max_value]; -inf / inf where unbounded."""

    min_value: int | float
    max_value: int | float

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_value", _as_end(self.min_value, is_lower=True))
        object.__setattr__(self, "max_value", _as_end(self.max_value, is_lower=False))

    @staticmethod
    def everything() -> ConstIntBound:
        """The bound that says nothing: [-inf, inf]."""
        return ConstIntBound(NEG_INF, POS_INF)

    @staticmethod
    def point(value: int) -> ConstIntBound:
        """Exactly `value`."""
        return ConstIntBound(value, value)

    @staticmethod
    def of_dtype(dtype: DataType | str) -> ConstIntBound:
        """Every value of `dtype` (bool is [0, 1]); everything for floats and handles."""
        return _dtype_bound(DataType.of(dtype).element)

    @property
    def is_point(self) -> bool:
        """True when the bound holds exactly one (finite) value."""
        return self.min_value == self.max_value and not math.isinf(self.min_value)

    @property
    def is_everything(self) -> bool:
        """True when neither side is bounded."""
        return self.min_value == NEG_INF and self.max_value == POS_INF

    def contains(self, value: int | float) -> bool:
        """True if `value` lies within the bound."""
        return self.min_value <= value <= self.max_value

    def intersect(self, other: ConstIntBound) -> ConstIntBound:
        """Values within both bounds (empty, min > max, when they are disjoint)."""
        if other.min_value <= self.min_value and self.max_value <= other.max_value:
            return self
        return ConstIntBound(
            max(self.min_value, other.min_value), min(self.max_value, other.max_value)
        )

    def union(self, other: ConstIntBound) -> ConstIntBound:
        """The smallest bound holding both."""
        return ConstIntBound(
            min(self.min_value, other.min_value), max(self.max_value, other.max_value)
        )

    def plus(self, other: ConstIntBound) -> ConstIntBound:
        """Bounds of a sum of values from the two bounds."""
        return ConstIntBound(self.min_value + other.min_value, self.max_value + other.max_value)

    def times(self, other: ConstIntBound) -> ConstIntBound:
        """Bounds of a product of values from the two bounds."""
        return _mul(self, other)


@cache
def _dtype_bound(dtype: DataType) -> ConstIntBound:
    if dtype.is_integer or dtype.is_bool:
        return ConstIntBound(dtype.min_value(), dtype.max_value())
    return ConstIntBound.everything()


def _is_integral(dtype: DataType) -> bool:
    return dtype.is_integer or dtype.is_bool


# ---- interval arithmetic on end points --------------------------------------------------------


def _times(x: int | float, y: int | float) -> int | float:
    """x * y with 0 * inf = 0 (a zero factor makes the product zero whatever the other is)."""
    return 0 if x == 0 or y == 0 else x * y


def _mul(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    corners = [_times(x, y) for x in (a.min_value, a.max_value) for y in (b.min_value, b.max_value)]
    return ConstIntBound(min(corners), max(corners))


def _negate(a: ConstIntBound) -> ConstIntBound:
    return ConstIntBound(-a.max_value, -a.min_value)


def _sign_parts(b: ConstIntBound) -> tuple[ConstIntBound | None, ConstIntBound | None]:
    """The positive and negative parts of a divisor's bound (zero is not a divisor)."""
    positive = ConstIntBound(max(b.min_value, 1), b.max_value) if b.max_value >= 1 else None
    negative = ConstIntBound(b.min_value, min(b.max_value, -1)) if b.min_value <= -1 else None
    return positive, negative


def _quotient(x: int | float, y: int | float, floor: bool) -> int | float:
    """x / y rounded down (floor) or toward zero, for y >= 1 (possibly inf)."""
    if math.isinf(x):
        return x
    if math.isinf(y):
        return -1 if floor and x < 0 else 0
    if floor:
        return x // y
    magnitude = abs(x) // y
    return magnitude if x >= 0 else -magnitude


def _divide_positive(a: ConstIntBound, b: ConstIntBound, floor: bool) -> ConstIntBound:
    # The quotient grows with a; for fixed a it moves toward zero as b grows.
    low = _quotient(a.min_value, b.min_value if a.min_value < 0 else b.max_value, floor)
    high = _quotient(a.max_value, b.min_value if a.max_value >= 0 else b.max_value, floor)
    return ConstIntBound(low, high)


def _divide(a: ConstIntBound, b: ConstIntBound, floor: bool) -> ConstIntBound | None:
    """a / b over the nonzero divisors in b (floor(a/b) = floor(-a/-b), the same truncated)."""
    positive, negative = _sign_parts(b)
    results = []
    if positive is not None:
        results.append(_divide_positive(a, positive, floor))
    if negative is not None:
        results.append(_divide_positive(_negate(a), _negate(negative), floor))
    return _union_all(results)


def _floormod_positive(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """a mod b (floor) for b >= 1: within [0, b - 1], tighter inside one period or for a >= 0."""
    if b.is_point and a.min_value > NEG_INF and a.max_value < POS_INF:
        c = b.min_value
        if a.min_value // c == a.max_value // c:
            return ConstIntBound(a.min_value % c, a.max_value % c)
    if a.min_value >= 0:
        return ConstIntBound(0, min(a.max_value, b.max_value - 1))
    return ConstIntBound(0, b.max_value - 1)


def _floormod(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound | None:
    # x mod (-c) == -((-x) mod c) for floor modulo.
    positive, negative = _sign_parts(b)
    results = []
    if positive is not None:
        results.append(_floormod_positive(a, positive))
    if negative is not None:
        results.append(_negate(_floormod_positive(_negate(a), _negate(negative))))
    return _union_all(results)


def _truncmod(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound | None:
    # The truncated remainder has the dividend's sign and depends on |b| only; on a >= 0 it is
    # the floor remainder, and on a <= 0 it is -((-a) mod |b|).
    positive, negative = _sign_parts(b)
    magnitudes = _union_all([p for p in (positive, _negate(negative) if negative else None) if p])
    if magnitudes is None:
        return None
    results = []
    if a.max_value >= 0:
        non_negative = ConstIntBound(max(a.min_value, 0), a.max_value)
        results.append(_floormod_positive(non_negative, magnitudes))
    if a.min_value <= 0:
        non_positive = ConstIntBound(a.min_value, min(a.max_value, 0))
        results.append(_negate(_floormod_positive(_negate(non_positive), magnitudes)))
    return _union_all(results)


def _union_all(bounds: list[ConstIntBound]) -> ConstIntBound | None:
    if not bounds:
        return None
    result = bounds[0]
    for bound in bounds[1:]:
        result = result.union(bound)
    return result


# ---- comparisons --------------------------------------------------------------------------------


def _truth(always: bool, never: bool) -> ConstIntBound:
    if always:
        return ConstIntBound.point(1)
    return ConstIntBound.point(0) if never else ConstIntBound(0, 1)


def _compare(cls: type[CmpOp], a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    disjoint = a.max_value < b.min_value or b.max_value < a.min_value
    same_point = a.is_point and b.is_point and a.min_value == b.min_value
    decisions = {
        EQ: (same_point, disjoint),
        NE: (disjoint, same_point),
        LT: (a.max_value < b.min_value, a.min_value >= b.max_value),
        LE: (a.max_value <= b.min_value, a.min_value > b.max_value),
        GT: (a.min_value > b.max_value, a.max_value <= b.min_value),
        GE: (a.min_value >= b.max_value, a.max_value < b.min_value),
    }
    always, never = decisions.get(cls, (False, False))
    return _truth(always, never)


# ---- the analysis -------------------------------------------------------------------------------


class _BoundAnalysis:
    """One const_int_bound call: bounds memoised by node identity, computed without recursion."""

    def __init__(
        self,
        var_bounds: Mapping[Var, ConstIntBound],
        atom_bound: Callable[[PrimExpr], ConstIntBound | None] | None,
    ) -> None:
        self.var_bounds = var_bounds
        self.atom_bound = atom_bound
        self.memo: dict[int, ConstIntBound] = {}

    def of(self, expr: PrimExpr) -> ConstIntBound:
        """The bound of an operand already analysed."""
        return self.memo[id(expr)]

    def bound(self, root: PrimExpr) -> ConstIntBound:
        """The bound of `root`, analysing its operands first (children before parents)."""
        return walk_children_first(root, self.memo, _operands, self._finish)

    def _finish(self, node: PrimExpr) -> ConstIntBound:
        dtype = node.dtype.element
        if not _is_integral(dtype):
            return ConstIntBound.everything()
        rule = _rule_for(type(node))
        result = rule(self, node) if rule is not None else _dtype_bound(dtype)
        full = _dtype_bound(dtype)
        overflowed = not (full.contains(result.min_value) and full.contains(result.max_value))
        if overflowed and _wraps(dtype) and isinstance(node, Add | Sub | Mul):
            result = full  # the value wrapped around: anywhere in the type
        result = result.intersect(full)
        if self.atom_bound is not None:
            fact = self.atom_bound(node)
            if fact is not None:
                result = result.intersect(fact)
        return result


def _wraps(dtype: DataType) -> bool:
    """Arithmetic of this type is taken to wrap around: unsigned and narrow signed integers.
    int32/int64 index arithmetic is assumed not to overflow (as TVM assumes), so it is clamped."""
    return dtype.is_integer and not (dtype.is_int and dtype.bits >= 32)


def _operands(node: PrimExpr) -> tuple[PrimExpr, ...]:
    """The sub-expressions whose bounds a rule reads (none for atoms)."""
    getter = _operand_getter(type(node))
    return getter(node) if getter is not None else ()


def _operand_getter(cls: type) -> Callable[[Any], tuple[PrimExpr, ...]] | None:
    return lookup_by_mro(_OPERANDS, cls)


def _call_operands(node: Call) -> tuple[PrimExpr, ...]:
    return node.args if is_if_then_else(node) else ()


_OPERANDS: dict[type, Callable[[Any], tuple[PrimExpr, ...]]] = {
    BinaryOp: lambda n: (n.a, n.b),
    CmpOp: lambda n: (n.a, n.b),
    And: lambda n: (n.a, n.b),
    Or: lambda n: (n.a, n.b),
    Not: lambda n: (n.a,),
    Select: lambda n: (n.condition, n.true_value, n.false_value),
    Cast: lambda n: (n.value,),
    Let: lambda n: (n.value,),
    Call: _call_operands,
    Broadcast: lambda n: (n.value,),
    Ramp: lambda n: (n.base, n.stride),
}

Rule = Callable[[_BoundAnalysis, Any], ConstIntBound]


def _var(analysis: _BoundAnalysis, node: Var) -> ConstIntBound:
    known = analysis.var_bounds.get(node)
    result = known if known is not None else _dtype_bound(node.dtype.element)
    if isinstance(node, SizeVar):
        result = result.intersect(ConstIntBound(0, POS_INF))
    return result


def _let(analysis: _BoundAnalysis, node: Let) -> ConstIntBound:
    # The body sees the bound variable; a fresh memo keeps it apart from other bindings of it.
    var_bounds = {**analysis.var_bounds, node.var: analysis.of(node.value)}
    return _BoundAnalysis(var_bounds, analysis.atom_bound).bound(node.body)


def _binary(combine: Callable[[ConstIntBound, ConstIntBound], ConstIntBound | None]) -> Rule:
    def rule(analysis: _BoundAnalysis, node: Any) -> ConstIntBound:
        result = combine(analysis.of(node.a), analysis.of(node.b))
        return result if result is not None else _dtype_bound(node.dtype.element)

    return rule


def _select(analysis: _BoundAnalysis, node: Select) -> ConstIntBound:
    return _choose(analysis, node.condition, node.true_value, node.false_value)


def _call(analysis: _BoundAnalysis, node: Call) -> ConstIntBound:
    if not is_if_then_else(node):
        return _dtype_bound(node.dtype.element)
    return _choose(analysis, *node.args)


def _choose(
    analysis: _BoundAnalysis, condition: PrimExpr, then: PrimExpr, other: PrimExpr
) -> ConstIntBound:
    decided = analysis.of(condition)
    if decided.is_point:
        return analysis.of(then if decided.min_value else other)
    return analysis.of(then).union(analysis.of(other))


def _cast(analysis: _BoundAnalysis, node: Cast) -> ConstIntBound:
    source = analysis.of(node.value)
    target = _dtype_bound(node.dtype.element)
    if target.min_value <= source.min_value and source.max_value <= target.max_value:
        return source
    return target


def _compare_rule(analysis: _BoundAnalysis, node: CmpOp) -> ConstIntBound:
    return _compare(type(node), analysis.of(node.a), analysis.of(node.b))


def _not(analysis: _BoundAnalysis, node: Not) -> ConstIntBound:
    a = analysis.of(node.a)
    return ConstIntBound(1 - a.max_value, 1 - a.min_value)


def _ramp(analysis: _BoundAnalysis, node: Ramp) -> ConstIntBound:
    steps = _mul(analysis.of(node.stride), ConstIntBound(0, node.lanes - 1))
    base = analysis.of(node.base)
    return ConstIntBound(base.min_value + steps.min_value, base.max_value + steps.max_value)


def _add(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    return ConstIntBound(a.min_value + b.min_value, a.max_value + b.max_value)


def _sub(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    return ConstIntBound(a.min_value - b.max_value, a.max_value - b.min_value)


def _min(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    return ConstIntBound(min(a.min_value, b.min_value), min(a.max_value, b.max_value))


def _max(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    return ConstIntBound(max(a.min_value, b.min_value), max(a.max_value, b.max_value))


_RULES: dict[type, Rule] = {
    IntImm: lambda _, n: ConstIntBound.point(n.value),
    Var: _var,
    Let: _let,
    Add: _binary(_add),
    Sub: _binary(_sub),
    Mul: _binary(_mul),
    Div: _binary(lambda a, b: _divide(a, b, floor=False)),
    Mod: _binary(_truncmod),
    FloorDiv: _binary(lambda a, b: _divide(a, b, floor=True)),
    FloorMod: _binary(_floormod),
    Min: _binary(_min),
    Max: _binary(_max),
    CmpOp: _compare_rule,
    And: _binary(_min),  # on [0, 1] bounds, "and" is min and "or" is max
    Or: _binary(_max),
    Not: _not,
    Select: _select,
    Call: _call,
    Cast: _cast,
    Broadcast: lambda analysis, n: analysis.of(n.value),
    Ramp: _ramp,
}


def _rule_for(cls: type) -> Rule | None:
    return lookup_by_mro(_RULES, cls)


def const_int_bound(
    expr: PrimExpr,
    var_bounds: Mapping[Var, ConstIntBound] | None = None,
    atom_bound: Callable[[PrimExpr], ConstIntBound | None] | None = None,
) -> ConstIntBound:
    """Sound inclusive bounds of an integer or bool expression; everything for floats.

    Variables take their bound from `var_bounds`, else [0, max] for a SizeVar, else their
    dtype's range. `atom_bound` is asked about every sub-expression and its answer intersected
    with the computed one: it supplies facts about BufferLoads and other atoms.
    """
    return _BoundAnalysis(var_bounds or {}, atom_bound).bound(expr)
