"""Symbolic integer intervals: the values an expression takes over variable domains (TVM's
IntervalSet and EvalSet).

End points are expressions over the variables left free (those not in the domain map), built
through `tessel.ir.builders` and passed through the caller's simplifier. Like TVM's, the
analysis assumes integer arithmetic does not overflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tessel.arith.const_int_bound import ConstIntBound
from tessel.arith.expr_walk import is_if_then_else, lookup_by_mro, walk_children_first
from tessel.ir import builders
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
    Range,
    Select,
    Sub,
    Var,
)
from tessel.ir.node import Node, child_items
from tessel.ir.structural import same_expr
from tessel.support.dtype import DataType

Simplify = Callable[[PrimExpr], PrimExpr]
End = PrimExpr | None


def _identity(expr: PrimExpr) -> PrimExpr:
    return expr


def _same(x: PrimExpr, y: PrimExpr) -> bool:
    """True if x and y are the same expression over the same variables."""
    return same_expr(x, y)


@dataclass(frozen=True, slots=True)
class IntSet:
    """A symbolic inclusive interval [min_value, max_value]; None is unbounded on that side."""

    min_value: PrimExpr | None
    max_value: PrimExpr | None

    @staticmethod
    def point(value: PrimExpr) -> IntSet:
        """Exactly the value of `value`."""
        return IntSet(value, value)

    @staticmethod
    def from_range(range_: Range, simplify: Simplify = _identity) -> IntSet:
        """[min, min + extent - 1] of a Range."""
        last = builders.add(range_.min, builders.sub(range_.extent, 1))
        return IntSet(range_.min, simplify(last))

    @staticmethod
    def everything() -> IntSet:
        """Every integer."""
        return IntSet(None, None)

    @property
    def is_point(self) -> bool:
        """True when both ends are the same expression (one object or equal constants)."""
        if self.min_value is None or self.max_value is None:
            return False
        return _same(self.min_value, self.max_value)

    @property
    def is_everything(self) -> bool:
        """True when neither side is bounded."""
        return self.min_value is None and self.max_value is None

    def union(self, other: IntSet, simplify: Simplify = _identity) -> IntSet:
        """The smallest interval holding both."""
        return IntSet(
            _pick(builders.min_value, self.min_value, other.min_value, simplify, unbounded=True),
            _pick(builders.max_value, self.max_value, other.max_value, simplify, unbounded=True),
        )


def _pick(
    pick: Callable[[Any, Any], PrimExpr], x: End, y: End, simplify: Simplify, unbounded: bool
) -> End:
    """pick(x, y), where an unbounded side (None) gives None if `unbounded` else the other."""
    if x is None or y is None:
        return None if unbounded else (x if y is None else y)
    return x if _same(x, y) else simplify(pick(x, y))


def _dependent_nodes(root: Node, variables: set[int]) -> set[int]:
    """The ids of nodes under `root` that mention one of `variables` (every Let counts)."""
    dependent: set[int] = set()
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        children = [c for _, v in child_items(node) for c in ((v,) if isinstance(v, Node) else v)]
        if expanded:
            mentions = id(node) in variables or isinstance(node, Let)
            if mentions or any(id(c) in dependent for c in children):
                dependent.add(id(node))
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in seen)
    return dependent


class _SetAnalysis:
    """One int_set call: sets memoised by node identity, computed without recursion."""

    def __init__(
        self,
        dom: Mapping[Var, IntSet],
        simplify: Simplify,
        const_bound: Callable[[PrimExpr], ConstIntBound] | None,
    ) -> None:
        self.dom = dom
        self.simplify = simplify
        self.const_bound = const_bound
        self.memo: dict[int, IntSet] = {}
        self.dependent: set[int] = set()

    def of(self, expr: PrimExpr) -> IntSet:
        """The set of an operand already analysed."""
        return self.memo[id(expr)]

    def analyse(self, root: PrimExpr) -> IntSet:
        """The set of `root`, analysing its operands first (children before parents)."""
        self.dependent = _dependent_nodes(root, {id(v) for v in self.dom})
        return walk_children_first(root, self.memo, self._operands, self._finish)

    def _operands(self, node: PrimExpr) -> tuple[PrimExpr, ...]:
        if id(node) not in self.dependent:
            return ()
        getter = _operand_getter(type(node))
        return getter(node) if getter is not None else ()

    def _finish(self, node: PrimExpr) -> IntSet:
        if id(node) not in self.dependent:
            return IntSet.point(node)
        folded = self._fold_points(node)
        if folded is not None:
            return folded
        rule = _rule_for(type(node))
        return rule(self, node) if rule is not None else IntSet.everything()

    def _fold_points(self, node: PrimExpr) -> IntSet | None:
        """The node rebuilt on its operands' values when every operand set is one value."""
        build = _BUILDERS.get(type(node))
        operands = _operand_getter(type(node))
        if build is None or operands is None:
            return None
        sets = [self.of(op) for op in operands(node)]
        if not all(s.is_point for s in sets):
            return None
        values = [s.min_value for s in sets]
        if type(node) in _DIVISIONS and builders.is_const_int(values[1], 0):
            return IntSet.everything()
        return IntSet.point(self.simplify(build(node, *values)))

    def combine(self, build: Callable[[Any, Any], PrimExpr], x: End, y: Any) -> End:
        """build(x, y) simplified, or None where x is unbounded."""
        return None if x is None else self.simplify(build(x, y))

    def bound(self, expr: PrimExpr) -> ConstIntBound:
        """Constant bounds of a free expression (an end point or a divisor)."""
        if isinstance(expr, IntImm):
            return ConstIntBound.point(expr.value)
        return self.const_bound(expr) if self.const_bound else ConstIntBound.everything()

    def single_period(self, a: IntSet, divisor: PrimExpr) -> bool:
        """True if a's ends are provably within one period of floor division by `divisor`."""
        if a.min_value is None or a.max_value is None:
            return False
        first = builders.floordiv(a.min_value, divisor)
        last = builders.floordiv(a.max_value, divisor)
        periods = self.bound(self.simplify(builders.sub(last, first)))
        return periods.min_value == periods.max_value == 0


_DIVISIONS = (Div, Mod, FloorDiv, FloorMod)


_OPERANDS: dict[type, Callable[[Any], tuple[PrimExpr, ...]]] = {
    BinaryOp: lambda n: (n.a, n.b),
    CmpOp: lambda n: (n.a, n.b),
    And: lambda n: (n.a, n.b),
    Or: lambda n: (n.a, n.b),
    Not: lambda n: (n.a,),
    Select: lambda n: (n.condition, n.true_value, n.false_value),
    Call: lambda n: n.args[1:] if is_if_then_else(n) else (),
    Cast: lambda n: (n.value,),
    Let: lambda n: (n.value,),
    Broadcast: lambda n: (n.value,),
    Ramp: lambda n: (n.base, n.stride),
}


def _operand_getter(cls: type) -> Callable[[Any], tuple[PrimExpr, ...]] | None:
    return lookup_by_mro(_OPERANDS, cls)


def _binary_builder(build: Callable[[Any, Any], PrimExpr]) -> Callable[..., PrimExpr]:
    return lambda _, a, b: build(a, b)


_BUILDERS: dict[type, Callable[..., PrimExpr]] = {
    cls: _binary_builder(build)
    for cls, build in {
        Add: builders.add,
        Sub: builders.sub,
        Mul: builders.mul,
        Div: builders.div,
        Mod: builders.truncmod,
        FloorDiv: builders.floordiv,
        FloorMod: builders.floormod,
        Min: builders.min_value,
        Max: builders.max_value,
        And: builders.logical_and,
        Or: builders.logical_or,
        EQ: builders.eq,
        NE: builders.ne,
        LT: builders.lt,
        LE: builders.le,
        GT: builders.gt,
        GE: builders.ge,
    }.items()
} | {
    Not: lambda _, a: builders.logical_not(a),
    Select: lambda _, c, t, f: builders.select(c, t, f),
    Cast: lambda node, value: builders.cast(value, node.dtype),
    Broadcast: lambda node, value: Broadcast(value, node.lanes),
}

Rule = Callable[[_SetAnalysis, Any], IntSet]


def _operand_sets(analysis: _SetAnalysis, node: BinaryOp) -> tuple[IntSet, IntSet]:
    return analysis.of(node.a), analysis.of(node.b)


def _point_value(s: IntSet) -> PrimExpr | None:
    """The one value of a point set, else None."""
    return s.min_value if s.is_point else None


def _add(analysis: _SetAnalysis, node: Add) -> IntSet:
    a, b = _operand_sets(analysis, node)
    if b.is_point:
        return _shift(analysis, a, b.min_value)
    if a.is_point:
        return _shift(analysis, b, a.min_value)
    low = None if b.min_value is None else analysis.combine(builders.add, a.min_value, b.min_value)
    high = None if b.max_value is None else analysis.combine(builders.add, a.max_value, b.max_value)
    return IntSet(low, high)


def _shift(analysis: _SetAnalysis, a: IntSet, offset: Any) -> IntSet:
    return IntSet(
        analysis.combine(builders.add, a.min_value, offset),
        analysis.combine(builders.add, a.max_value, offset),
    )


def _sub(analysis: _SetAnalysis, node: Sub) -> IntSet:
    a, b = _operand_sets(analysis, node)
    low = None if b.max_value is None else analysis.combine(builders.sub, a.min_value, b.max_value)
    high = None if b.min_value is None else analysis.combine(builders.sub, a.max_value, b.min_value)
    return IntSet(low, high)


def _scale(
    analysis: _SetAnalysis,
    a: IntSet,
    factor: PrimExpr | None,
    build: Callable[[Any, Any], PrimExpr],
    least_magnitude: int,
) -> IntSet:
    """build(a, factor) for an operation monotone in a: increasing for factor >= least_magnitude,
    decreasing for factor <= -least_magnitude; everything when neither is proven."""
    if factor is None:
        return IntSet.everything()
    bound = analysis.bound(factor)
    if bound.min_value >= least_magnitude:
        low, high = a.min_value, a.max_value
    elif bound.max_value <= -least_magnitude:
        low, high = a.max_value, a.min_value
    else:
        return IntSet.everything()
    return IntSet(analysis.combine(build, low, factor), analysis.combine(build, high, factor))


def _mul(analysis: _SetAnalysis, node: Mul) -> IntSet:
    a, b = _operand_sets(analysis, node)
    if b.is_point:
        return _scale(analysis, a, _point_value(b), builders.mul, 0)
    return _scale(analysis, b, _point_value(a), builders.mul, 0)  # multiplication commutes


def _divide(build: Callable[[Any, Any], PrimExpr]) -> Rule:
    def rule(analysis: _SetAnalysis, node: Any) -> IntSet:
        a, b = _operand_sets(analysis, node)
        return _scale(analysis, a, _point_value(b), build, 1)  # a divisor is never zero

    return rule


def _floormod(analysis: _SetAnalysis, node: FloorMod) -> IntSet:
    a, b = _operand_sets(analysis, node)
    divisor = _point_value(b)
    if divisor is None:
        return IntSet.everything()
    bound = analysis.bound(divisor)
    if not (bound.min_value >= 1 or bound.max_value <= -1):
        return IntSet.everything()
    if analysis.single_period(a, divisor):
        return IntSet(
            analysis.combine(builders.floormod, a.min_value, divisor),
            analysis.combine(builders.floormod, a.max_value, divisor),
        )
    zero = builders.const(0, node.dtype)
    if bound.min_value >= 1:
        return IntSet(zero, analysis.simplify(builders.sub(divisor, 1)))
    return IntSet(analysis.simplify(builders.add(divisor, 1)), zero)


def _truncmod(analysis: _SetAnalysis, node: Mod) -> IntSet:
    a, b = _operand_sets(analysis, node)
    divisor = _point_value(b)
    if divisor is None:
        return IntSet.everything()
    bound = analysis.bound(divisor)
    if bound.min_value >= 1:
        magnitude = divisor
    elif bound.max_value <= -1:
        magnitude = analysis.simplify(builders.neg(divisor))
    else:
        return IntSet.everything()
    # The remainder has the dividend's sign and a magnitude below |divisor|.
    zero = builders.const(0, node.dtype)
    low = analysis.simplify(builders.sub(1, magnitude))
    high = analysis.simplify(builders.sub(magnitude, 1))
    if a.min_value is not None and analysis.bound(a.min_value).min_value >= 0:
        low = zero
    if a.max_value is not None and analysis.bound(a.max_value).max_value <= 0:
        high = zero
    return IntSet(low, high)


def _min(analysis: _SetAnalysis, node: Min) -> IntSet:
    a, b = _operand_sets(analysis, node)
    simplify = analysis.simplify
    return IntSet(
        _pick(builders.min_value, a.min_value, b.min_value, simplify, unbounded=True),
        _pick(builders.min_value, a.max_value, b.max_value, simplify, unbounded=False),
    )


def _max(analysis: _SetAnalysis, node: Max) -> IntSet:
    a, b = _operand_sets(analysis, node)
    simplify = analysis.simplify
    return IntSet(
        _pick(builders.max_value, a.min_value, b.min_value, simplify, unbounded=False),
        _pick(builders.max_value, a.max_value, b.max_value, simplify, unbounded=True),
    )


def _select(analysis: _SetAnalysis, node: Select) -> IntSet:
    return analysis.of(node.true_value).union(analysis.of(node.false_value), analysis.simplify)


def _call(analysis: _SetAnalysis, node: Call) -> IntSet:
    if not is_if_then_else(node):
        return IntSet.everything()
    _, then, other = node.args
    return analysis.of(then).union(analysis.of(other), analysis.simplify)


def _fits(source: DataType, target: DataType) -> bool:
    """True if every value of `source` is a value of `target` (so the cast is monotone)."""
    if not ((source.is_integer or source.is_bool) and (target.is_integer or target.is_bool)):
        return False
    return target.min_value() <= source.min_value() and source.max_value() <= target.max_value()


def _cast(analysis: _SetAnalysis, node: Cast) -> IntSet:
    if not _fits(node.value.dtype.element, node.dtype.element):
        return IntSet.everything()
    value = analysis.of(node.value)
    return IntSet(
        analysis.combine(builders.cast, value.min_value, node.dtype),
        analysis.combine(builders.cast, value.max_value, node.dtype),
    )


def _truth(analysis: _SetAnalysis, node: PrimExpr) -> IntSet:
    return IntSet(builders.const(False), builders.const(True))


def _let(analysis: _SetAnalysis, node: Let) -> IntSet:
    # The body sees the bound variable ranging over its value's set; a fresh memo keeps it apart
    # from other bindings of the same variable.
    dom = {**analysis.dom, node.var: analysis.of(node.value)}
    return _SetAnalysis(dom, analysis.simplify, analysis.const_bound).analyse(node.body)


def _ramp(analysis: _SetAnalysis, node: Ramp) -> IntSet:
    # Lane i is base + stride * i: the ends move by stride * (lanes - 1) on one side.
    stride = analysis.of(node.stride)
    if not (stride.is_point and isinstance(stride.min_value, IntImm)):
        return IntSet.everything()
    span = stride.min_value.value * (node.lanes - 1)
    base = analysis.of(node.base)
    return IntSet(
        analysis.combine(builders.add, base.min_value, min(span, 0)),
        analysis.combine(builders.add, base.max_value, max(span, 0)),
    )


_RULES: dict[type, Rule] = {
    Var: lambda analysis, n: analysis.dom.get(n, IntSet.point(n)),
    Let: _let,
    Add: _add,
    Sub: _sub,
    Mul: _mul,
    Div: _divide(builders.div),
    FloorDiv: _divide(builders.floordiv),
    Mod: _truncmod,
    FloorMod: _floormod,
    Min: _min,
    Max: _max,
    Select: _select,
    Call: _call,
    Cast: _cast,
    CmpOp: _truth,
    And: _truth,
    Or: _truth,
    Not: _truth,
    Broadcast: lambda analysis, n: analysis.of(n.value),
    Ramp: _ramp,
}


def _rule_for(cls: type) -> Rule | None:
    return lookup_by_mro(_RULES, cls)


def int_set(
    expr: PrimExpr,
    dom_map: Mapping[Var, Range | IntSet],
    simplify: Simplify = _identity,
    const_bound: Callable[[PrimExpr], ConstIntBound] | None = None,
) -> IntSet:
    """The interval of values `expr` takes as each variable of `dom_map` ranges over its domain.

    Variables not in `dom_map` are fixed symbols and may appear in the end points. `const_bound`
    (constant bounds of expressions over those symbols) decides signs of symbolic factors and
    whether a `%` operand stays within one period.
    """
    return _SetAnalysis(_Domains(dom_map, simplify), simplify, const_bound).analyse(expr)


class _Domains(Mapping[Var, IntSet]):
    """`dom_map` with each Range made an IntSet when the analysis first reaches its variable:
    callers pass every loop around an access, and most of them are not in the expression (the
    conversion simplifies an end point, which was most of the time of a buffer's regions)."""

    def __init__(self, dom_map: Mapping[Var, Range | IntSet], simplify: Simplify) -> None:
        self.dom_map, self.simplify = dom_map, simplify
        self.sets: dict[Var, IntSet] = {}

    def __getitem__(self, var: Var) -> IntSet:
        found = self.sets.get(var)
        if found is None:
            domain = self.dom_map[var]
            if not isinstance(domain, IntSet):
                domain = IntSet.from_range(domain, self.simplify)
            found = self.sets[var] = domain
        return found

    def __iter__(self) -> Iterator[Var]:
        return iter(self.dom_map)

    def __len__(self) -> int:
        return len(self.dom_map)
