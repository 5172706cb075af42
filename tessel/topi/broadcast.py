"""Binary and ternary elementwise operators with NumPy broadcasting (TVM's tvm.topi broadcast
functions). Each operand is a tensor or a scalar (a Python number or a PrimExpr); tensors must
share one dtype, and scalars are converted to it. With no tensor operand the result is the scalar
expression, as in TVM."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr
from tessel.ir.structural import structural_equal
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError
from tessel.te.tensor import Tensor, TensorIterVar
from tessel.tir import builtin
from tessel.topi.utils import op_error

BROADCAST = "broadcast"  # TVM's tag.BROADCAST: elementwise after broadcasting the operands

Operand = Tensor | PrimExpr | int | float | bool


def _shape_text(shape: Sequence[PrimExpr]) -> str:
    return "[" + ", ".join(str(e) for e in shape) + "]"


def _is_one(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def _merge_extent(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """The broadcast of two extents, or None if they do not broadcast."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a if a.value == b.value or b.value == 1 else b if a.value == 1 else None
    if structural_equal(a, b, map_free_vars=False) or _is_one(b):
        return a
    if _is_one(a):
        return b
    # A symbolic extent against a constant other than 1 is taken to equal it, as TVM does.
    if isinstance(a, IntImm) or isinstance(b, IntImm):
        return a if isinstance(a, IntImm) else b
    return None  # two different symbolic extents: which one is 1 is not known until run time


def broadcast_shape(
    shape_a: Sequence[Any],
    shape_b: Sequence[Any],
    op: str = "broadcast",
    arguments: tuple[str, str] = ("lhs", "rhs"),
) -> tuple[PrimExpr, ...]:
    """The NumPy broadcast of two shapes (aligned at the last dimension; extents of 1 stretch).
    Raises an OperatorError for `op` naming both arguments and shapes if they do not broadcast."""
    a = tuple(builders.convert(e) for e in shape_a)
    b = tuple(builders.convert(e) for e in shape_b)
    rank = max(len(a), len(b))
    a_full = (builders.const(1),) * (rank - len(a)) + a
    b_full = (builders.const(1),) * (rank - len(b)) + b
    result = []
    for dim, (x, y) in enumerate(zip(a_full, b_full, strict=True)):
        merged = _merge_extent(x, y)
        if merged is None:
            raise op_error(
                op,
                arguments[1],
                f"shape {_shape_text(b)} does not broadcast with shape {_shape_text(a)} of "
                f"`{arguments[0]}`: dimension {dim - rank} is {y} against {x}",
                hint="each dimension, counted from the last, must be equal or 1 in one of them",
            )
        result.append(merged)
    return tuple(result)


def broadcast_indices(shape: Sequence[PrimExpr], indices: Sequence[Any]) -> tuple[PrimExpr, ...]:
    """The element of a tensor of `shape` that output element `indices` of a broadcast reads:
    leading output dimensions dropped, and index 0 along the tensor's extents of 1."""
    aligned = tuple(indices)[len(indices) - len(shape) :]
    zero = builders.const(0)
    return tuple(
        zero if _is_one(extent) else builders.convert(i)
        for extent, i in zip(shape, aligned, strict=True)
    )


def _check_operand(op: str, argument: str, value: Any) -> None:
    if isinstance(value, TensorIterVar) or not isinstance(
        value, Tensor | PrimExpr | int | float | bool
    ):
        raise op_error(
            op, argument, f"expected a te.Tensor or a scalar, got {type(value).__name__}"
        )


def _common_dtype(op: str, operands: dict[str, Operand]) -> str | None:
    """The dtype shared by the tensor operands (None if there are none)."""
    tensors = [(name, v) for name, v in operands.items() if isinstance(v, Tensor)]
    for name, tensor in tensors[1:]:
        first_name, first = tensors[0]
        if tensor.dtype != first.dtype:
            raise op_error(
                op,
                name,
                f"dtype {tensor.dtype} differs from {first.dtype} of `{first_name}`",
                hint="cast one operand with topi.cast so that both have the same dtype",
            )
    return tensors[0][1].dtype if tensors else None


def _scalar(op: str, argument: str, value: Any, dtype: str) -> PrimExpr:
    """A scalar operand as an expression of the tensors' dtype."""
    try:
        if isinstance(value, PrimExpr):
            return builders.cast(value, dtype)
        return builders.const(value, dtype)
    except IRTypeError as err:
        raise op_error(
            op, argument, f"the scalar {value!r} cannot be represented in {dtype}"
        ) from err


def _broadcast_of(op: str, operands: dict[str, Operand]) -> tuple[PrimExpr, ...]:
    """The broadcast shape of the tensor operands."""
    shape: tuple[PrimExpr, ...] | None = None
    shape_of = ""
    for name, value in operands.items():
        if not isinstance(value, Tensor):
            continue
        shape = (
            value.shape
            if shape is None
            else broadcast_shape(shape, value.shape, op, (shape_of, name))
        )
        shape_of = f"{shape_of} and {name}" if shape_of else name
    assert shape is not None, "called with at least one tensor"
    return shape


def _read(value: Tensor | PrimExpr, indices: tuple[Any, ...]) -> PrimExpr:
    if isinstance(value, Tensor):
        return value(*broadcast_indices(value.shape, indices))
    return value


DtypeCheck = Callable[[str, str, DataType], None]


def _apply(
    op: str,
    operands: dict[str, Operand],
    fscalar: Callable[..., PrimExpr],
    check: DtypeCheck | None = None,
) -> Any:
    """`fscalar` of the operands, broadcast; `check(op, argument, dtype)` vets the dtype."""
    for name, value in operands.items():
        _check_operand(op, name, value)
    dtype = _common_dtype(op, operands)
    if dtype is None:  # scalars only: an expression, as TVM returns
        values = [builders.convert(v) for v in operands.values()]
        if check is not None:
            check(op, next(iter(operands)), values[0].dtype)
        return fscalar(*values)
    if check is not None:
        check(op, next(n for n, v in operands.items() if isinstance(v, Tensor)), DataType.of(dtype))
    args = [v if isinstance(v, Tensor) else _scalar(op, n, v, dtype) for n, v in operands.items()]
    shape = _broadcast_of(op, operands)
    return te.compute(
        shape, lambda *i: fscalar(*(_read(a, i) for a in args)), name=f"T_{op}", tag=BROADCAST
    )


def _not_bool(op: str, argument: str, dtype: DataType) -> None:
    if dtype.is_bool:
        raise op_error(
            op,
            argument,
            "arithmetic on bool tensors is not defined",
            hint="cast to an integer dtype first, or use the logical operators",
        )


def _float_only(op: str, argument: str, dtype: DataType) -> None:
    if not dtype.is_float:
        raise op_error(
            op,
            argument,
            f"expected a float dtype, got {dtype}",
            hint="cast the operands to a float dtype with topi.cast",
        )


def _bool_only(op: str, argument: str, dtype: DataType) -> None:
    if not dtype.is_bool:
        raise op_error(
            op,
            argument,
            f"expected a bool dtype, got {dtype}",
            hint="compare with topi.not_equal(x, 0) to get a bool tensor",
        )


def _binary(
    op: str, fscalar: Callable[[PrimExpr, PrimExpr], PrimExpr], check: DtypeCheck | None, doc: str
):
    def apply(lhs: Operand, rhs: Operand) -> Any:
        return _apply(op, {"lhs": lhs, "rhs": rhs}, fscalar, check)

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = doc
    return apply


def _nonzero_divisor(op: str) -> Callable[[PrimExpr, PrimExpr], None]:
    """Integer division by the constant zero is undefined: say so when the operator is built."""

    def check(_: PrimExpr, b: PrimExpr) -> None:
        if b.dtype.is_integer and isinstance(b, IntImm) and b.value == 0:
            raise op_error(op, "rhs", "integer division by the constant 0")

    return check


def _division(
    op: str, int_op: Callable, float_op: Callable
) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    zero_check = _nonzero_divisor(op)

    def scalar(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        zero_check(a, b)
        return int_op(a, b) if a.dtype.is_integer else float_op(a, b)

    return scalar


def _float_floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """NumPy's (Python's) float %, exactly: fmod (exact in floating point) moved into rhs's sign
    by adding rhs once; a zero result takes rhs's sign. a - floor(a / b) * b would round."""
    remainder = te.fmod(a, b)
    zero = builders.const(0, a.dtype)
    other_sign = builders.ne(builders.lt(remainder, zero), builders.lt(b, zero))
    moved = builders.select(
        builders.logical_and(builders.ne(remainder, zero), other_sign), remainder + b, remainder
    )
    signed_zero = builtin.math_binary("copysign", zero, b)
    return builders.select(builders.eq(remainder, zero), signed_zero, moved)


add = _binary("add", builders.add, _not_bool, "lhs + rhs with broadcasting.")
subtract = _binary("subtract", builders.sub, _not_bool, "lhs - rhs with broadcasting.")
multiply = _binary("multiply", builders.mul, _not_bool, "lhs * rhs with broadcasting.")
divide = _binary(
    "divide",
    _division("divide", builders.truncdiv, builders.div),
    _not_bool,
    "lhs / rhs with broadcasting: true division on floats, truncating (C) division on integers.",
)
floor_divide = _binary(
    "floor_divide",
    _division("floor_divide", builders.floordiv, lambda a, b: te.floor(builders.div(a, b))),
    _not_bool,
    "floor(lhs / rhs) with broadcasting (NumPy's //).",
)
mod = _binary(
    "mod",
    _division("mod", builders.truncmod, te.fmod),
    _not_bool,
    "The truncated remainder (sign of lhs, C's % and fmod) with broadcasting, as TVM's topi.mod.",
)
floor_mod = _binary(
    "floor_mod",
    _division("floor_mod", builders.floormod, _float_floor_mod),
    _not_bool,
    "The floored remainder (sign of rhs, NumPy's %) with broadcasting.",
)
power = _binary("power", te.power, _float_only, "lhs ** rhs on floats with broadcasting.")
maximum = _binary(
    "maximum", builders.max_value, _not_bool, "The larger of lhs and rhs, with broadcasting."
)
minimum = _binary(
    "minimum", builders.min_value, _not_bool, "The smaller of lhs and rhs, with broadcasting."
)
equal = _binary("equal", builders.eq, None, "lhs == rhs (a bool tensor) with broadcasting.")
not_equal = _binary("not_equal", builders.ne, None, "lhs != rhs (a bool tensor) with broadcasting.")
less = _binary("less", builders.lt, None, "lhs < rhs (a bool tensor) with broadcasting.")
less_equal = _binary(
    "less_equal", builders.le, None, "lhs <= rhs (a bool tensor) with broadcasting."
)
greater = _binary("greater", builders.gt, None, "lhs > rhs (a bool tensor) with broadcasting.")
greater_equal = _binary(
    "greater_equal", builders.ge, None, "lhs >= rhs (a bool tensor) with broadcasting."
)
logical_and = _binary(
    "logical_and", builders.logical_and, _bool_only, "lhs and rhs on bools, with broadcasting."
)
logical_or = _binary(
    "logical_or", builders.logical_or, _bool_only, "lhs or rhs on bools, with broadcasting."
)
logical_xor = _binary(
    "logical_xor", builders.ne, _bool_only, "lhs xor rhs on bools, with broadcasting."
)


def logical_not(data: Operand) -> Any:
    """not data, elementwise on a bool tensor (or a bool scalar)."""
    return _apply("logical_not", {"data": data}, builders.logical_not, _bool_only)


def _where_scalar(condition: PrimExpr, x: PrimExpr, y: PrimExpr) -> PrimExpr:
    if not condition.dtype.is_bool:
        condition = builders.ne(condition, builders.const(0, condition.dtype))
    return builders.select(condition, x, y)


def where(condition: Operand, x: Operand, y: Operand) -> Any:
    """`x` where `condition` holds (is non-zero), else `y`, broadcasting all three. `x` and `y`
    share a dtype (scalars take it); the condition keeps its own."""
    for name, value in (("condition", condition), ("x", x), ("y", y)):
        _check_operand("where", name, value)
    dtype = _common_dtype("where", {"x": x, "y": y})
    if dtype is None:
        x, y = builders.match_types(x, y)
    else:
        x, y = (
            v if isinstance(v, Tensor) else _scalar("where", n, v, dtype)
            for n, v in (("x", x), ("y", y))
        )
    if not isinstance(condition, Tensor):
        condition = builders.convert(condition)
    operands = {"condition": condition, "x": x, "y": y}
    if not any(isinstance(v, Tensor) for v in operands.values()):
        return _where_scalar(*(builders.convert(v) for v in operands.values()))
    shape = _broadcast_of("where", operands)
    return te.compute(
        shape,
        lambda *i: _where_scalar(*(_read(v, i) for v in (condition, x, y))),
        name="T_where",
        tag=BROADCAST,
    )
