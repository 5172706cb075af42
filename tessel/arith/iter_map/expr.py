"""Iterator-map expressions: marks, splits and sums (TVM's IterMark / IterSplitExpr / IterSumExpr).

An `IterMark` is an iterator `source` ranging over [0, extent): an input loop variable (shifted to
start at zero) or a fused sum of other marks' splits. An `IterSplitExpr` takes the digit
`(source // lower_factor) % extent` of a mark and scales it; an `IterSumExpr` adds splits and a
base. Marks are shared by identity: two splits of one mark split the same iterator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Sub, Var
from tessel.ir.node import Node
from tessel.ir.structural import same_expr
from tessel.support.dtype import DataType

CheckLevel = Literal["surjective", "bijective", "no_check"]
CHECK_LEVELS: tuple[str, ...] = ("surjective", "bijective", "no_check")


@dataclass(frozen=True, slots=True, eq=False)
class IterMark(Node):
    """An iterator over [0, extent): a shifted input variable or a fused sum of splits."""

    source: PrimExpr | IterSumExpr
    extent: PrimExpr

    def __post_init__(self) -> None:
        if not isinstance(self.source, PrimExpr | IterSumExpr):
            raise TypeError(
                f"IterMark source must be a PrimExpr or IterSumExpr, got {self.source!r}"
            )
        object.__setattr__(self, "extent", builders.convert(self.extent))

    @property
    def dtype(self) -> DataType:
        """The integer type the iterator's values have."""
        return self.source.dtype

    def __str__(self) -> str:
        return f"mark({source_text(self)}, extent={self.extent})"


@dataclass(frozen=True, slots=True, eq=False)
class IterSplitExpr(Node):
    """`(source // lower_factor) % extent * scale`: one digit of a mark, scaled."""

    source: IterMark
    lower_factor: PrimExpr
    extent: PrimExpr
    scale: PrimExpr

    def __post_init__(self) -> None:
        if not isinstance(self.source, IterMark):
            raise TypeError(f"IterSplitExpr source must be an IterMark, got {self.source!r}")
        for name in ("lower_factor", "extent", "scale"):
            object.__setattr__(self, name, builders.convert(getattr(self, name)))

    @property
    def dtype(self) -> DataType:
        """The integer type of the split's values."""
        return self.source.dtype

    def __str__(self) -> str:
        return str(normalize_iter_map_to_expr(self))


@dataclass(frozen=True, slots=True, eq=False)
class IterSumExpr(Node):
    """The sum of splits plus a base that does not depend on the iterators."""

    args: tuple[IterSplitExpr, ...]
    base: PrimExpr

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        if not all(isinstance(arg, IterSplitExpr) for arg in self.args):
            raise TypeError(f"IterSumExpr args must be IterSplitExprs, got {self.args!r}")
        object.__setattr__(self, "base", builders.convert(self.base))

    @property
    def dtype(self) -> DataType:
        """The integer type of the sum's values."""
        return self.base.dtype

    def __str__(self) -> str:
        return str(normalize_iter_map_to_expr(self))


IterMapExpr = IterSplitExpr | IterSumExpr


@dataclass(frozen=True, slots=True)
class IterMapResult:
    """What `detect_iter_map` found: one sum per index, or no indices and the reasons why not."""

    indices: tuple[IterSumExpr, ...] = ()
    errors: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return not self.errors


def full_split(mark: IterMark, scale: PrimExpr | int = 1) -> IterSplitExpr:
    """The split that takes all of `mark`, times `scale`."""
    one = builders.const(1, mark.dtype)
    return IterSplitExpr(mark, one, mark.extent, builders.convert(scale))


def same_value(a: PrimExpr, b: PrimExpr) -> bool:
    """Syntactically the same value: equal constants or structurally equal expressions."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return same_expr(a, b)  # over the same variables: `i * 4` is not `j * 4`


def source_text(mark: IterMark) -> str:
    """The mark's source as an expression, for messages."""
    return (
        str(normalize_iter_map_to_expr(mark.source))
        if isinstance(mark.source, IterSumExpr)
        else str(mark.source)
    )


def normalize_iter_map_to_expr(expr: IterSumExpr | IterSplitExpr | PrimExpr) -> PrimExpr:
    """The plain expression an iterator-map expression stands for."""
    if isinstance(expr, IterSumExpr):
        total = builders.const(0, expr.dtype)
        for arg in expr.args:
            total = builders.add(total, _split_to_expr(arg))
        return builders.add(total, expr.base)
    if isinstance(expr, IterSplitExpr):
        return _split_to_expr(expr)
    return expr


def _split_to_expr(split: IterSplitExpr) -> PrimExpr:
    source = normalize_iter_map_to_expr(split.source.source)
    mark_extent = split.source.extent
    if builders.is_const_int(split.lower_factor, 1) and same_value(split.extent, mark_extent):
        digit = source
    else:
        covered = builders.mul(split.lower_factor, split.extent)
        if not same_value(covered, mark_extent):  # the top digit needs no modulo
            source = builders.floormod(source, covered)  # TVM's `x % (l * e) // l`
        digit = builders.floordiv(source, split.lower_factor)
    return builders.mul(digit, split.scale)


class NotIterMapError(Exception):
    """An expression is not an iterator map; the message says why."""


def mark_name(mark: IterMark) -> str:
    """How messages name a mark: its variable for an input iterator, else its fused expression."""
    source = mark.source
    if isinstance(source, Sub) and isinstance(source.a, Var):
        return source.a.name
    if isinstance(source, Var):
        return source.name
    return source_text(mark)


def input_var_of(mark: IterMark) -> tuple[Var, PrimExpr] | None:
    """(var, min) for an input iterator's mark (source `var` or `var - min`), else None."""
    source = mark.source
    if isinstance(source, Var):
        return source, builders.const(0, source.dtype)
    if isinstance(source, Sub) and isinstance(source.a, Var):
        return source.a, source.b
    return None
