"""Patterns over scalar expressions, written with the IR's own operators (docs/architecture.md §11).

`PVar("x")` matches any expression, `PConst("c1")` any integer constant, a Python int exactly that
constant; operators and `pmin`/`pmax`/`pselect`/`pif_then_else` build pattern trees. A pattern
matches an expression into bindings and instantiates back into IR through `tessel.ir.builders`,
so constant sub-terms of a right-hand side (`c1 + c2`) fold as they are built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tessel.arith.expr_walk import is_if_then_else
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
    Call,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
)
from tessel.ir.structural import same_expr
from tessel.support.dtype import DataType

Bindings = dict[str, PrimExpr]


class Pattern:
    """A node of a pattern tree; operators build bigger patterns."""

    __slots__ = ()

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        """Extend `bindings` so that this pattern equals `expr`; False (bindings unusable) if
        not."""
        raise NotImplementedError

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        """The expression this pattern denotes under `bindings`; literals take `dtype`."""
        raise NotImplementedError

    def variables(self) -> tuple[Pattern, ...]:
        """The PVar and PConst leaves, each once, in first-appearance order."""
        raise NotImplementedError

    def __add__(self, other: Any) -> Pattern:
        return PNode(Add, (self, as_pattern(other)))

    def __radd__(self, other: Any) -> Pattern:
        return PNode(Add, (as_pattern(other), self))

    def __sub__(self, other: Any) -> Pattern:
        return PNode(Sub, (self, as_pattern(other)))

    def __rsub__(self, other: Any) -> Pattern:
        return PNode(Sub, (as_pattern(other), self))

    def __mul__(self, other: Any) -> Pattern:
        return PNode(Mul, (self, as_pattern(other)))

    def __rmul__(self, other: Any) -> Pattern:
        return PNode(Mul, (as_pattern(other), self))

    def __floordiv__(self, other: Any) -> Pattern:
        return PNode(FloorDiv, (self, as_pattern(other)))

    def __rfloordiv__(self, other: Any) -> Pattern:
        return PNode(FloorDiv, (as_pattern(other), self))

    def __mod__(self, other: Any) -> Pattern:
        return PNode(FloorMod, (self, as_pattern(other)))

    def __rmod__(self, other: Any) -> Pattern:
        return PNode(FloorMod, (as_pattern(other), self))

    def __lt__(self, other: Any) -> Pattern:
        return PNode(LT, (self, as_pattern(other)))

    def __le__(self, other: Any) -> Pattern:
        return PNode(LE, (self, as_pattern(other)))

    def __gt__(self, other: Any) -> Pattern:
        return PNode(GT, (self, as_pattern(other)))

    def __ge__(self, other: Any) -> Pattern:
        return PNode(GE, (self, as_pattern(other)))

    def __and__(self, other: Any) -> Pattern:
        return PNode(And, (self, as_pattern(other)))

    def __or__(self, other: Any) -> Pattern:
        return PNode(Or, (self, as_pattern(other)))

    def __invert__(self) -> Pattern:
        return PNode(Not, (self,))

    def eq(self, other: Any) -> Pattern:
        """`self == other` as a pattern (`==` stays Python equality on patterns)."""
        return PNode(EQ, (self, as_pattern(other)))

    def ne(self, other: Any) -> Pattern:
        """`self != other` as a pattern."""
        return PNode(NE, (self, as_pattern(other)))

    def __neg__(self) -> Pattern:
        return PNode(Sub, (PLiteral(0), self))


@dataclass(frozen=True, eq=False, slots=True)
class PVar(Pattern):
    """Matches any expression; a second occurrence must be structurally equal to the first."""

    name: str

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        bound = bindings.get(self.name)
        if bound is None:
            bindings[self.name] = expr
            return True
        return bound is expr or same_expr(bound, expr)

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        return bindings[self.name]

    def variables(self) -> tuple[Pattern, ...]:
        return (self,)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, slots=True)
class PConst(Pattern):
    """Matches an integer constant (IntImm).

    Not a subclass of PVar on purpose: Python tries a subclass's reflected operator first, so
    `x < c1` would become `c1 > x` and never match.
    """

    name: str

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        if not isinstance(expr, IntImm) or expr.dtype.is_bool:
            return False
        bound = bindings.get(self.name)
        if bound is None:
            bindings[self.name] = expr
            return True
        return isinstance(bound, IntImm) and bound.value == expr.value

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        return bindings[self.name]

    def variables(self) -> tuple[Pattern, ...]:
        return (self,)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, slots=True)
class PLiteral(Pattern):
    """Matches exactly the integer `value`; builds it in the surrounding dtype."""

    value: int

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        return isinstance(expr, IntImm) and expr.value == self.value

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        return builders.const(self.value, dtype)

    def variables(self) -> tuple[Pattern, ...]:
        return ()

    def __str__(self) -> str:
        return str(self.value)


_BUILDERS: dict[type, Callable[..., PrimExpr]] = {
    Add: builders.add,
    Sub: builders.sub,
    Mul: builders.mul,
    FloorDiv: builders.floordiv,
    FloorMod: builders.floormod,
    Div: builders.truncdiv,
    Mod: builders.truncmod,
    Min: builders.min_value,
    Max: builders.max_value,
    LT: builders.lt,
    LE: builders.le,
    GT: builders.gt,
    GE: builders.ge,
    EQ: builders.eq,
    NE: builders.ne,
    And: builders.logical_and,
    Or: builders.logical_or,
    Not: builders.logical_not,
    Select: builders.select,
}

_FIELDS: dict[type, tuple[str, ...]] = {
    Not: ("a",),
    Select: ("condition", "true_value", "false_value"),
}


@dataclass(frozen=True, eq=False, slots=True)
class PNode(Pattern):
    """Matches a node of class `node_cls` whose operands match `operands`."""

    node_cls: type
    operands: tuple[Pattern, ...]

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        if type(expr) is not self.node_cls:
            return False
        fields = _FIELDS.get(self.node_cls, ("a", "b"))
        return all(
            p.match(getattr(expr, f), bindings) for p, f in zip(self.operands, fields, strict=False)
        )

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        operand_dtype = _operand_dtype(self.operands, bindings, dtype)
        return _BUILDERS[self.node_cls](*(p.build(bindings, operand_dtype) for p in self.operands))

    def variables(self) -> tuple[Pattern, ...]:
        return _unique(v for p in self.operands for v in p.variables())

    def __str__(self) -> str:
        return _describe(self)


@dataclass(frozen=True, eq=False, slots=True)
class PIfThenElse(Pattern):
    """Matches `T.if_then_else(condition, t, f)` (a Call of the builtin, matched by op name)."""

    condition: Pattern
    true_value: Pattern
    false_value: Pattern

    def match(self, expr: PrimExpr, bindings: Bindings) -> bool:
        if not is_if_then_else(expr):
            return False
        if not self.condition.match(expr.args[0], bindings):
            return False
        bindings.setdefault("__if_then_else__", expr)
        parts = (self.true_value, self.false_value)
        return all(p.match(a, bindings) for p, a in zip(parts, expr.args[1:], strict=False))

    def build(self, bindings: Bindings, dtype: DataType) -> PrimExpr:
        # tir's Op object is above arith: reuse the one of the matched call.
        original = bindings["__if_then_else__"]
        args = (
            self.condition.build(bindings, dtype),
            self.true_value.build(bindings, dtype),
            self.false_value.build(bindings, dtype),
        )
        return Call(original.dtype, original.op, args)

    def variables(self) -> tuple[Pattern, ...]:
        parts = (self.condition, self.true_value, self.false_value)
        return _unique(v for p in parts for v in p.variables())

    def __str__(self) -> str:
        return f"T.if_then_else({self.condition}, {self.true_value}, {self.false_value})"


def as_pattern(value: Any) -> Pattern:
    """A pattern from a pattern or a Python int or bool (a literal)."""
    if isinstance(value, Pattern):
        return value
    if not isinstance(value, int):
        raise TypeError(f"cannot use {value!r} in a pattern; use PVar, PConst or an int")
    return PLiteral(int(value))


def pmin(a: Any, b: Any) -> Pattern:
    """min(a, b) as a pattern."""
    return PNode(Min, (as_pattern(a), as_pattern(b)))


def pmax(a: Any, b: Any) -> Pattern:
    """max(a, b) as a pattern."""
    return PNode(Max, (as_pattern(a), as_pattern(b)))


def pselect(condition: Any, true_value: Any, false_value: Any) -> Pattern:
    """Select(condition, t, f) as a pattern."""
    return PNode(Select, tuple(as_pattern(v) for v in (condition, true_value, false_value)))


def pif_then_else(condition: Any, true_value: Any, false_value: Any) -> Pattern:
    """T.if_then_else(condition, t, f) as a pattern."""
    return PIfThenElse(as_pattern(condition), as_pattern(true_value), as_pattern(false_value))


def _operand_dtype(operands: tuple[Pattern, ...], bindings: Bindings, dtype: DataType) -> DataType:
    """The dtype literals take: that of a bound operand (comparisons have bool results)."""
    for p in operands:
        for v in p.variables():
            bound = bindings.get(v.name)
            if bound is not None and not isinstance(v, PConst) and not bound.dtype.is_bool:
                return bound.dtype
    for p in operands:
        for v in p.variables():
            bound = bindings.get(v.name)
            if bound is not None and not bound.dtype.is_bool:
                return bound.dtype
    return dtype


def _unique(items: Any) -> tuple[Pattern, ...]:
    seen: dict[int, Pattern] = {}
    for item in items:
        seen.setdefault(id(item), item)
    return tuple(seen.values())


_SYMBOLS = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%", LT: "<", LE: "<=",
            GT: ">", GE: ">=", EQ: "==", NE: "!=", And: "and", Or: "or"}  # fmt: skip


def _describe(node: PNode) -> str:
    names = [str(p) for p in node.operands]
    if node.node_cls in _SYMBOLS:
        return f"({names[0]} {_SYMBOLS[node.node_cls]} {names[1]})"
    return f"{node.node_cls.__name__.lower()}({', '.join(names)})"
