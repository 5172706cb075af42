"""Modular sets {coeff * k + base} of integer expressions (TVM's ModularSetAnalyzer).

Like TVM's, the analysis assumes integer arithmetic does not overflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tessel.arith.expr_walk import is_if_then_else, lookup_by_mro, walk_children_first
from tessel.ir.expr import (
    Add,
    BinaryOp,
    Broadcast,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)
from tessel.support.dtype import DataType


@dataclass(frozen=True, slots=True)
class ModularSet:
    """The integers {coeff * k + base}; coeff 0 means exactly `base`.

    Normalised on construction: coeff >= 0, and 0 <= base < coeff when coeff > 0.
    """

    coeff: int
    base: int

    def __post_init__(self) -> None:
        coeff = abs(int(self.coeff))
        object.__setattr__(self, "coeff", coeff)
        object.__setattr__(self, "base", int(self.base) % coeff if coeff else int(self.base))

    @staticmethod
    def everything() -> ModularSet:
        """Every integer: coeff 1, base 0."""
        return ModularSet(1, 0)

    @staticmethod
    def point(value: int) -> ModularSet:
        """Exactly `value`."""
        return ModularSet(0, value)

    @property
    def is_point(self) -> bool:
        """True when the set holds exactly one value."""
        return self.coeff == 0

    @property
    def is_everything(self) -> bool:
        """True when the set says nothing."""
        return self.coeff == 1

    def contains(self, value: int) -> bool:
        """True if `value` is in the set."""
        if self.coeff == 0:
            return value == self.base
        return (value - self.base) % self.coeff == 0

    def union(self, other: ModularSet) -> ModularSet:
        """The smallest modular set holding both."""
        coeff = math.gcd(self.coeff, other.coeff, abs(self.base - other.base))
        return ModularSet(coeff, self.base)

    def intersect(self, other: ModularSet) -> ModularSet:
        """The values in both, by the Chinese remainder theorem.

        Disjoint sets have an empty intersection, which no ModularSet represents; `self` is
        returned then, a sound over-approximation.
        """
        if self.coeff == 0:
            return self
        if other.coeff == 0:
            return other if self.contains(other.base) else self
        gcd = math.gcd(self.coeff, other.coeff)
        difference = other.base - self.base
        if difference % gcd:
            return self
        # Solve base + coeff * p == other.base (mod other.coeff) for p.
        modulus = other.coeff // gcd
        p = (difference // gcd) * pow(self.coeff // gcd, -1, modulus) % modulus
        return ModularSet(self.coeff * modulus, self.base + self.coeff * p)


_EVERYTHING = ModularSet.everything()


def _add(a: ModularSet, b: ModularSet) -> ModularSet:
    return ModularSet(math.gcd(a.coeff, b.coeff), a.base + b.base)


def _sub(a: ModularSet, b: ModularSet) -> ModularSet:
    return ModularSet(math.gcd(a.coeff, b.coeff), a.base - b.base)


def _mul(a: ModularSet, b: ModularSet) -> ModularSet:
    # (c1 k + b1)(c2 l + b2) = c1 c2 kl + c1 b2 k + c2 b1 l + b1 b2
    coeff = math.gcd(a.coeff * b.coeff, a.coeff * b.base, b.coeff * a.base)
    return ModularSet(coeff, a.base * b.base)


def _floordiv(a: ModularSet, b: ModularSet) -> ModularSet:
    # (c1 k + b1) // c = (c1 / c) k + b1 // c when c divides c1.
    if not b.is_point or b.base == 0 or a.coeff % b.base:
        return _EVERYTHING
    return ModularSet(a.coeff // b.base, a.base // b.base)


def _truncdiv(a: ModularSet, b: ModularSet) -> ModularSet:
    # Exact when c divides every value; truncation and floor agree then.
    if not b.is_point or b.base == 0 or a.coeff % b.base or a.base % b.base:
        return _EVERYTHING
    return ModularSet(a.coeff // b.base, a.base // b.base)


def _remainder(a: ModularSet, b: ModularSet, floor: bool) -> ModularSet:
    """a - b * q for an integer q: every value of b is a multiple of gcd(b.coeff, b.base)."""
    if b.is_point and b.base != 0 and a.coeff % b.base == 0:
        if floor:
            return ModularSet.point(a.base % b.base)
        if a.base % b.base == 0:
            return ModularSet.point(0)
    step = math.gcd(b.coeff, b.base)
    if step == 0:  # b is always zero
        return _EVERYTHING
    return ModularSet(math.gcd(a.coeff, step), a.base)


def _truncated_quotient(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y >= 0) else -quotient


# Each integer operator on Python ints, as TIR defines it (floor and truncating divisions).
EXACT_OPERATIONS: dict[type, Callable[[int, int], int]] = {
    Add: lambda x, y: x + y,
    Sub: lambda x, y: x - y,
    Mul: lambda x, y: x * y,
    FloorDiv: lambda x, y: x // y,
    FloorMod: lambda x, y: x % y,
    Div: _truncated_quotient,
    Mod: lambda x, y: x - _truncated_quotient(x, y) * y,
    Min: min,
    Max: max,
}


def _fold(cls: type, x: int, y: int) -> ModularSet:
    """The exact result of an operation on two known values (everything on division by 0)."""
    if y == 0 and cls in (FloorDiv, FloorMod, Div, Mod):
        return _EVERYTHING
    return ModularSet.point(EXACT_OPERATIONS[cls](x, y))


def _fits(source: DataType, target: DataType) -> bool:
    """True if every value of `source` is a value of `target`."""
    if not ((source.is_integer or source.is_bool) and (target.is_integer or target.is_bool)):
        return False
    return target.min_value() <= source.min_value() and source.max_value() <= target.max_value()


class _ModularAnalysis:
    """One modular_set call: sets memoised by node identity, computed without recursion."""

    def __init__(self, var_sets: Mapping[Var, ModularSet]) -> None:
        self.var_sets = var_sets
        self.memo: dict[int, ModularSet] = {}

    def of(self, expr: PrimExpr) -> ModularSet:
        """The set of an operand already analysed."""
        return self.memo[id(expr)]

    def analyse(self, root: PrimExpr) -> ModularSet:
        """The set of `root`, analysing its operands first (children before parents)."""
        return walk_children_first(root, self.memo, _operands, self._finish)

    def _finish(self, node: PrimExpr) -> ModularSet:
        dtype = node.dtype.element
        rule = _rule_for(type(node))
        if rule is None or not (dtype.is_integer or dtype.is_bool):
            return _EVERYTHING
        return rule(self, node)


_OPERANDS: dict[type, Callable[[Any], tuple[PrimExpr, ...]]] = {
    BinaryOp: lambda n: (n.a, n.b),
    Select: lambda n: (n.true_value, n.false_value),
    Call: lambda n: n.args[1:] if is_if_then_else(n) else (),
    Cast: lambda n: (n.value,),
    Let: lambda n: (n.value,),
    Broadcast: lambda n: (n.value,),
    Ramp: lambda n: (n.base, n.stride),
}


def _operand_getter(cls: type) -> Callable[[Any], tuple[PrimExpr, ...]] | None:
    return lookup_by_mro(_OPERANDS, cls)


def _operands(node: PrimExpr) -> tuple[PrimExpr, ...]:
    getter = _operand_getter(type(node))
    return getter(node) if getter is not None else ()


Rule = Callable[[_ModularAnalysis, Any], ModularSet]


def _binary(combine: Callable[[ModularSet, ModularSet], ModularSet]) -> Rule:
    def rule(analysis: _ModularAnalysis, node: Any) -> ModularSet:
        a, b = analysis.of(node.a), analysis.of(node.b)
        if a.is_point and b.is_point:
            return _fold(type(node), a.base, b.base)
        return combine(a, b)

    return rule


def _let(analysis: _ModularAnalysis, node: Let) -> ModularSet:
    # A fresh memo keeps the body apart from other bindings of the same variable.
    var_sets = {**analysis.var_sets, node.var: analysis.of(node.value)}
    return _ModularAnalysis(var_sets).analyse(node.body)


def _cast(analysis: _ModularAnalysis, node: Cast) -> ModularSet:
    if _fits(node.value.dtype.element, node.dtype.element):
        return analysis.of(node.value)
    return _EVERYTHING


def _union_of_operands(analysis: _ModularAnalysis, node: Any) -> ModularSet:
    first, second = _operands(node)
    return analysis.of(first).union(analysis.of(second))


def _call(analysis: _ModularAnalysis, node: Call) -> ModularSet:
    return _union_of_operands(analysis, node) if is_if_then_else(node) else _EVERYTHING


def _ramp(analysis: _ModularAnalysis, node: Ramp) -> ModularSet:
    # Lane i is base + stride * i.
    return _add(analysis.of(node.base), _mul(analysis.of(node.stride), _EVERYTHING))


_RULES: dict[type, Rule] = {
    IntImm: lambda _, n: ModularSet.point(n.value),
    Var: lambda analysis, n: analysis.var_sets.get(n, _EVERYTHING),
    Let: _let,
    Add: _binary(_add),
    Sub: _binary(_sub),
    Mul: _binary(_mul),
    FloorDiv: _binary(_floordiv),
    Div: _binary(_truncdiv),
    FloorMod: _binary(lambda a, b: _remainder(a, b, floor=True)),
    Mod: _binary(lambda a, b: _remainder(a, b, floor=False)),
    Min: _binary(ModularSet.union),
    Max: _binary(ModularSet.union),
    Select: _union_of_operands,
    Call: lambda analysis, n: (
        _union_of_operands(analysis, n) if is_if_then_else(n) else _EVERYTHING
    ),
    Cast: _cast,
    Broadcast: lambda analysis, n: analysis.of(n.value),
    Ramp: _ramp,
}


def _rule_for(cls: type) -> Rule | None:
    return lookup_by_mro(_RULES, cls)


def modular_set(expr: PrimExpr, var_sets: Mapping[Var, ModularSet] | None = None) -> ModularSet:
    """A modular set holding every value of an integer expression (everything if unknown)."""
    return _ModularAnalysis(var_sets or {}).analyse(expr)
