"""Scalar expression nodes (PrimExpr) shared by every layer above `ir`.

Operators on PrimExpr build IR through `tessel.ir.builders`, which folds constants and matches
dtypes; constructing a node class directly builds exactly that node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tessel.ir.node import Node
from tessel.ir.type import PointerType
from tessel.support.dtype import DataType, bool_, handle, int32
from tessel.support.errors import IRTypeError


def _defers_to_tensors(method: Any) -> Any:
    """An arithmetic operator that leaves a whole-tensor operand to the tensor's own operator
    (`A[0] + B` with B a te.Tensor broadcasts, as in TVM): classes that build tensor arithmetic
    set `defers_expr_operators`, and Python then calls their reflected operator."""

    def operator(self: PrimExpr, other: Any) -> Any:
        if getattr(type(other), "defers_expr_operators", False):
            return NotImplemented
        return method(self, other)

    operator.__name__ = method.__name__
    operator.__doc__ = method.__doc__
    return operator


@dataclass(frozen=True, slots=True, eq=False)
class PrimExpr(Node):
    """A scalar (or vector) expression with a dtype."""

    if TYPE_CHECKING:
        dtype: DataType

    def __bool__(self) -> bool:
        raise TypeError(
            f"symbolic condition `{self}` used as a Python bool; "
            "use tessel.ir.builders.if_then_else / select, or the analyzer to prove it"
        )

    # `==`/`!=` give a SymbolicEquality: IR where an expression is expected (`i == 3` in an index
    # map lambda), object identity where Python wants a bool (so nodes stay usable as dict keys).
    def __eq__(self, other: object) -> SymbolicEquality:  # type: ignore[override]  # see above
        return SymbolicEquality(self, other, negated=False)

    def __ne__(self, other: object) -> SymbolicEquality:  # type: ignore[override]  # see above
        return SymbolicEquality(self, other, negated=True)

    @_defers_to_tensors
    def __add__(self, other: Any) -> PrimExpr:
        return _b.add(self, other)

    @_defers_to_tensors
    def __radd__(self, other: Any) -> PrimExpr:
        return _b.add(other, self)

    @_defers_to_tensors
    def __sub__(self, other: Any) -> PrimExpr:
        return _b.sub(self, other)

    @_defers_to_tensors
    def __rsub__(self, other: Any) -> PrimExpr:
        return _b.sub(other, self)

    @_defers_to_tensors
    def __mul__(self, other: Any) -> PrimExpr:
        return _b.mul(self, other)

    @_defers_to_tensors
    def __rmul__(self, other: Any) -> PrimExpr:
        return _b.mul(other, self)

    @_defers_to_tensors
    def __truediv__(self, other: Any) -> PrimExpr:
        return _b.div(self, other)

    @_defers_to_tensors
    def __rtruediv__(self, other: Any) -> PrimExpr:
        return _b.div(other, self)

    @_defers_to_tensors
    def __floordiv__(self, other: Any) -> PrimExpr:
        return _b.floordiv(self, other)

    @_defers_to_tensors
    def __rfloordiv__(self, other: Any) -> PrimExpr:
        return _b.floordiv(other, self)

    @_defers_to_tensors
    def __mod__(self, other: Any) -> PrimExpr:
        return _b.floormod(self, other)

    @_defers_to_tensors
    def __rmod__(self, other: Any) -> PrimExpr:
        return _b.floormod(other, self)

    def __neg__(self) -> PrimExpr:
        return _b.neg(self)

    def __lt__(self, other: Any) -> PrimExpr:
        return _b.lt(self, other)

    def __le__(self, other: Any) -> PrimExpr:
        return _b.le(self, other)

    def __gt__(self, other: Any) -> PrimExpr:
        return _b.gt(self, other)

    def __ge__(self, other: Any) -> PrimExpr:
        return _b.ge(self, other)

    def __and__(self, other: Any) -> PrimExpr:
        return _b.logical_and(self, other)

    def __rand__(self, other: Any) -> PrimExpr:
        return _b.logical_and(other, self)

    def __or__(self, other: Any) -> PrimExpr:
        return _b.logical_or(self, other)

    def __ror__(self, other: Any) -> PrimExpr:
        return _b.logical_or(other, self)

    def __invert__(self) -> PrimExpr:
        return _b.logical_not(self)

    def astype(self, dtype: DataType | str) -> PrimExpr:
        """This expression converted to `dtype` (TVM's PrimExpr.astype)."""
        return _b.cast(self, dtype)

    __hash__ = Node.__hash__


class SymbolicEquality:
    """The result of `a == b` (or `!=`) on expressions, as TVM's EqualOp: `bool()` of it is object
    identity, and `as_expr()` (which every builder applies) is the EQ/NE node, folded."""

    __slots__ = ("a", "b", "negated")

    def __init__(self, a: PrimExpr, b: object, negated: bool) -> None:
        self.a, self.b, self.negated = a, b, negated

    def __bool__(self) -> bool:
        return (self.a is self.b) != self.negated

    def as_expr(self) -> PrimExpr:
        """The comparison as IR."""
        return (_b.ne if self.negated else _b.eq)(self.a, self.b)

    @property
    def dtype(self) -> DataType:
        return self.as_expr().dtype

    def __and__(self, other: Any) -> PrimExpr:
        return _b.logical_and(self, other)

    def __rand__(self, other: Any) -> PrimExpr:
        return _b.logical_and(other, self)

    def __or__(self, other: Any) -> PrimExpr:
        return _b.logical_or(self, other)

    def __ror__(self, other: Any) -> PrimExpr:
        return _b.logical_or(other, self)

    def __invert__(self) -> PrimExpr:
        return _b.logical_not(self)

    def __repr__(self) -> str:
        return repr(self.as_expr())

    def __str__(self) -> str:
        return str(self.as_expr())


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A variable; two Vars with the same name are different variables."""

    name: str
    dtype: DataType = int32
    type_annotation: PointerType | None = None

    def __post_init__(self) -> None:
        _normalize_dtype(self)
        if self.type_annotation is not None and not self.dtype.is_handle:
            raise IRTypeError(f"variable `{self.name}` has a pointer type but dtype {self.dtype}")


@dataclass(frozen=True, slots=True, eq=False)
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape)."""


@dataclass(frozen=True, slots=True, eq=False)
class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    dtype: DataType
    value: int

    def __post_init__(self) -> None:
        _normalize_dtype(self)
        if not (self.dtype.is_integer or self.dtype.is_bool) or self.dtype.is_vector:
            raise IRTypeError(f"IntImm needs a scalar integer or bool dtype, got {self.dtype}")
        if not self.dtype.min_value() <= self.value <= self.dtype.max_value():
            raise IRTypeError(f"{self.value} does not fit in {self.dtype}", span=self.span)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@dataclass(frozen=True, slots=True, eq=False)
class FloatImm(PrimExpr):
    """A floating-point constant (inf and nan allowed)."""

    dtype: DataType
    value: float

    def __post_init__(self) -> None:
        _normalize_dtype(self)
        if not self.dtype.is_float or self.dtype.is_vector:
            raise IRTypeError(f"FloatImm needs a scalar float dtype, got {self.dtype}")

    def __float__(self) -> float:
        return self.value


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(PrimExpr):
    """A string constant (arguments of intrinsics such as assert messages)."""

    value: str
    dtype: DataType = field(default=handle, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.value, str):
            raise IRTypeError(
                f"StringImm holds a str, not {type(self.value).__name__} {self.value!r}"
            )


@dataclass(frozen=True, slots=True, eq=False)
class Cast(PrimExpr):
    """Convert `value` to `dtype` (lanes must agree)."""

    dtype: DataType
    value: PrimExpr

    def __post_init__(self) -> None:
        _normalize_dtype(self)
        if self.dtype.lanes != self.value.dtype.lanes:
            raise IRTypeError(f"cannot cast {self.value.dtype} to {self.dtype}: lanes differ")


def _normalize_dtype(node: Any) -> None:
    """Accept dtype strings in constructors (`Var("n", "int64")`) by parsing them once."""
    if not isinstance(node.dtype, DataType):
        object.__setattr__(node, "dtype", DataType.of(node.dtype))


def _check_same_dtype(node: Any, a: PrimExpr, b: PrimExpr) -> None:
    if a.dtype != b.dtype:
        raise IRTypeError(
            f"{type(node).__name__} operands have different dtypes: {a.dtype} and {b.dtype}",
            span=node.span,
        )


@dataclass(frozen=True, slots=True, eq=False)
class BinaryOp(PrimExpr):
    """Arithmetic on two operands of one dtype; the result has that dtype."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)
    symbol: ClassVar[str] = "?"

    def __post_init__(self) -> None:
        _check_same_dtype(self, self.a, self.b)
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Add(BinaryOp):
    """a + b"""

    symbol: ClassVar[str] = "+"


@dataclass(frozen=True, slots=True, eq=False)
class Sub(BinaryOp):
    """a - b"""

    symbol: ClassVar[str] = "-"


@dataclass(frozen=True, slots=True, eq=False)
class Mul(BinaryOp):
    """a * b"""

    symbol: ClassVar[str] = "*"


@dataclass(frozen=True, slots=True, eq=False)
class Div(BinaryOp):
    """a / b: true division for floats, truncating (C) division for integers."""

    symbol: ClassVar[str] = "/"


@dataclass(frozen=True, slots=True, eq=False)
class Mod(BinaryOp):
    """Truncating (C) remainder: the sign follows the dividend."""

    symbol: ClassVar[str] = "%"


@dataclass(frozen=True, slots=True, eq=False)
class FloorDiv(BinaryOp):
    """Floor division (Python's `//`)."""

    symbol: ClassVar[str] = "//"


@dataclass(frozen=True, slots=True, eq=False)
class FloorMod(BinaryOp):
    """Floor modulo (Python's `%`): the sign follows the divisor."""

    symbol: ClassVar[str] = "%"


@dataclass(frozen=True, slots=True, eq=False)
class Min(BinaryOp):
    """min(a, b)"""


@dataclass(frozen=True, slots=True, eq=False)
class Max(BinaryOp):
    """max(a, b)"""


@dataclass(frozen=True, slots=True, eq=False)
class CmpOp(PrimExpr):
    """A comparison of two operands of one dtype; the result is bool (per lane)."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)
    symbol: ClassVar[str] = "?"

    def __post_init__(self) -> None:
        _check_same_dtype(self, self.a, self.b)
        object.__setattr__(self, "dtype", bool_.with_lanes(self.a.dtype.lanes))


@dataclass(frozen=True, slots=True, eq=False)
class EQ(CmpOp):
    """a == b"""

    symbol: ClassVar[str] = "=="


@dataclass(frozen=True, slots=True, eq=False)
class NE(CmpOp):
    """a != b"""

    symbol: ClassVar[str] = "!="


@dataclass(frozen=True, slots=True, eq=False)
class LT(CmpOp):
    """a < b"""

    symbol: ClassVar[str] = "<"


@dataclass(frozen=True, slots=True, eq=False)
class LE(CmpOp):
    """a <= b"""

    symbol: ClassVar[str] = "<="


@dataclass(frozen=True, slots=True, eq=False)
class GT(CmpOp):
    """a > b"""

    symbol: ClassVar[str] = ">"


@dataclass(frozen=True, slots=True, eq=False)
class GE(CmpOp):
    """a >= b"""

    symbol: ClassVar[str] = ">="


def _check_bool(node: Any, *operands: PrimExpr) -> None:
    for operand in operands:
        if not operand.dtype.is_bool:
            raise IRTypeError(
                f"{type(node).__name__} needs bool operands, got {operand.dtype}", span=node.span
            )


@dataclass(frozen=True, slots=True, eq=False)
class And(PrimExpr):
    """Logical and of two bool expressions."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        _check_bool(self, self.a, self.b)
        _check_same_dtype(self, self.a, self.b)
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Or(PrimExpr):
    """Logical or of two bool expressions."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        _check_bool(self, self.a, self.b)
        _check_same_dtype(self, self.a, self.b)
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Not(PrimExpr):
    """Logical negation of a bool expression."""

    a: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        _check_bool(self, self.a)
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Select(PrimExpr):
    """`true_value` where `condition` holds, else `false_value`; both sides are evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        _check_bool(self, self.condition)
        _check_same_dtype(self, self.true_value, self.false_value)
        object.__setattr__(self, "dtype", self.true_value.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Ramp(PrimExpr):
    """The vector base, base + stride, ..., base + (lanes - 1) * stride."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        _check_same_dtype(self, self.base, self.stride)
        if self.lanes < 2 or self.base.dtype.is_vector:
            raise IRTypeError(f"Ramp needs a scalar base and at least 2 lanes, got {self.lanes}")
        object.__setattr__(self, "dtype", self.base.dtype.with_lanes(self.lanes))


@dataclass(frozen=True, slots=True, eq=False)
class Broadcast(PrimExpr):
    """A vector of `lanes` copies of a scalar."""

    value: PrimExpr
    lanes: int
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if self.lanes < 2 or self.value.dtype.is_vector:
            raise IRTypeError(f"Broadcast needs a scalar and at least 2 lanes, got {self.lanes}")
        object.__setattr__(self, "dtype", self.value.dtype.with_lanes(self.lanes))


@dataclass(frozen=True, slots=True, eq=False)
class Let(PrimExpr):
    """`body` with `var` bound to `value`."""

    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: DataType = field(init=False)

    def __post_init__(self) -> None:
        if self.var.dtype != self.value.dtype:
            raise IRTypeError(
                f"let binds `{self.var.name}` of {self.var.dtype} to {self.value.dtype}"
            )
        object.__setattr__(self, "dtype", self.body.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Op(Node):
    """A builtin operation called by `Call` (math intrinsics, `undef`, `assume`, ...). The
    first Op made with a name is that op: passes compare ops by identity, so an Op read back
    from a pickle (a cached kernel) is that first one again."""

    name: str

    def __post_init__(self) -> None:
        _OPS.setdefault(self.name, self)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_op_named, (self.name,))


_OPS: dict[str, Op] = {}


def _op_named(name: str) -> Op:
    """The Op of that name (what unpickling an Op gives)."""
    return _OPS.get(name) or Op(name)


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Node):
    """The name of a function in an IRModule."""

    name_hint: str


@dataclass(frozen=True, slots=True, eq=False)
class Call(PrimExpr):
    """A call of a builtin `Op` or of a module function (`GlobalVar`)."""

    dtype: DataType
    op: Op | GlobalVar
    args: tuple[PrimExpr, ...]

    def __post_init__(self) -> None:
        _normalize_dtype(self)


@dataclass(frozen=True, slots=True, eq=False)
class Range(Node):
    """The half-open integer interval [min, min + extent)."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value: Any, extent: Any) -> Range:
        """A Range from Python ints or expressions (ints become int32 constants)."""
        return Range(_b.convert(min_value), _b.convert(extent))


from tessel.ir import builders as _b  # noqa: E402  (builders construct the classes above)
