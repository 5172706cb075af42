"""Builtin operations called through `Call`: undef, assume, likely, if_then_else, math, bits.

Each op is one module-level `Op`; the functions below build calls with the right dtype.
"""

from __future__ import annotations

from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Call, Cast, Op, PrimExpr, StringImm
from tessel.support.dtype import DataType, bool_, int32
from tessel.support.errors import IRTypeError
from tessel.support.names import is_c_identifier
from tessel.tir.buffer import BufferLoad

undef_op = Op("tir.undef")
assume_op = Op("tir.assume")
likely_op = Op("tir.likely")
if_then_else_op = Op("tir.if_then_else")
ret_op = Op("tir.ret")
call_extern_op = Op("tir.call_extern")
call_pure_extern_op = Op("tir.call_pure_extern")
call_packed_op = Op("tir.tvm_call_packed")  # TVM's name; the script spells it T.call_packed
address_of_op = Op("tir.address_of")
access_ptr_op = Op("tir.tvm_access_ptr")  # TVM's name; the script spells it A.access_ptr(...)
type_annotation_op = Op("tir.type_annotation")  # a dtype carried as a call's dtype

# Unary float math: result dtype is the argument's dtype.
MATH_UNARY = {
    name: Op(f"tir.{name}")
    for name in (
        "exp",
        "exp2",
        "exp10",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tan",
        "sinh",
        "cosh",
        "tanh",
        "asin",
        "acos",
        "atan",
        "erf",
        "sigmoid",
        "fabs",
        "floor",
        "ceil",
        "round",
        "trunc",
        "nearbyint",
    )
}
MATH_BINARY = {name: Op(f"tir.{name}") for name in ("pow", "atan2", "fmod", "hypot", "copysign")}
FLOAT_TESTS = {name: Op(f"tir.{name}") for name in ("isnan", "isinf", "isfinite")}
BITWISE_BINARY = {
    name: Op(f"tir.{name}")
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")
}
bitwise_not_op = Op("tir.bitwise_not")

ALL_OPS: dict[str, Op] = {
    op.name: op
    for op in (
        undef_op,
        assume_op,
        likely_op,
        if_then_else_op,
        ret_op,
        call_extern_op,
        bitwise_not_op,
        call_pure_extern_op,
        call_packed_op,
        address_of_op,
        access_ptr_op,
        type_annotation_op,
        *MATH_UNARY.values(),
        *MATH_BINARY.values(),
        *FLOAT_TESTS.values(),
        *BITWISE_BINARY.values(),
    )
}


def undef(dtype: DataType | str = "int32") -> PrimExpr:
    """An unspecified value (padding nobody may observe); stores of it are removed."""
    return Call(DataType.of(dtype), undef_op, ())


def is_undef(expr: Any) -> bool:
    """True if `expr` is T.undef(), possibly cast (`T.Cast("float32", T.undef())` is as
    unspecified as the undef it converts)."""
    while isinstance(expr, Cast):
        expr = expr.value
    return isinstance(expr, Call) and expr.op is undef_op


def assume(condition: Any) -> PrimExpr:
    """A compile-time fact for the analyzer (a buffer constraint); removed before codegen."""
    return Call(int32, assume_op, (_bool(condition),))


def likely(condition: Any) -> PrimExpr:
    """`condition`, hinted as usually true."""
    return Call(bool_, likely_op, (_bool(condition),))


def if_then_else(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:
    """`true_value` if `condition` else `false_value`, evaluating only the chosen side."""
    condition = _bool(condition)
    true_value, false_value = builders.match_types(true_value, false_value)
    if builders.is_const_int(condition):
        return true_value if condition.value else false_value  # type: ignore[attr-defined]  # IntImm
    return Call(true_value.dtype, if_then_else_op, (condition, true_value, false_value))


def math_unary(name: str, x: Any) -> PrimExpr:
    """A unary math intrinsic (exp, log, sqrt, tanh, erf, sigmoid, floor, ...) on a float."""
    x = builders.convert(x)
    if not x.dtype.is_float:
        raise IRTypeError(
            f"T.{name} needs a float argument, got `{x}` of {x.dtype}", rule="call.dtype"
        )
    return Call(x.dtype, MATH_UNARY[name], (x,))


def math_binary(name: str, x: Any, y: Any) -> PrimExpr:
    """A binary math intrinsic (pow, atan2, fmod, hypot, copysign) on floats."""
    x, y = builders.match_types(x, y)
    if not x.dtype.is_float:
        raise IRTypeError(f"T.{name} needs float arguments, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, MATH_BINARY[name], (x, y))


def float_test(name: str, x: Any) -> PrimExpr:
    """isnan / isinf / isfinite of a float."""
    x = builders.convert(x)
    return Call(bool_.with_lanes(x.dtype.lanes), FLOAT_TESTS[name], (x,))


def bitwise(name: str, x: Any, y: Any) -> PrimExpr:
    """A bitwise operation or shift on integers."""
    x, y = builders.match_types(x, y)
    if not x.dtype.is_integer:
        raise IRTypeError(f"T.{name} needs integer arguments, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, BITWISE_BINARY[name], (x, y))


def bitwise_not(x: Any) -> PrimExpr:
    """~x on an integer."""
    x = builders.convert(x)
    if not x.dtype.is_integer:
        raise IRTypeError(f"T.bitwise_not needs an integer, got {x.dtype}", rule="call.dtype")
    return Call(x.dtype, bitwise_not_op, (x,))


def abs_value(x: Any) -> PrimExpr:
    """|x|: fabs for floats, a select for integers."""
    x = builders.convert(x)
    if x.dtype.is_float:
        return Call(x.dtype, MATH_UNARY["fabs"], (x,))
    if x.dtype.is_uint:
        return x
    return builders.select(builders.ge(x, 0), x, builders.neg(x))


def call_extern(dtype: DataType | str, name: str, *args: Any, pure: bool = False) -> PrimExpr:
    """A call of an external C function by name (an ASCII C identifier, not a keyword);
    `pure=True` is TVM's call_pure_extern (no side effects, so it may be moved or removed)."""
    if not is_c_identifier(name):
        raise IRTypeError(
            f"call_extern needs the name of a C function, got {name!r}",
            rule="call_extern.name",
            hint="a C identifier: ASCII letters, digits and `_`, not starting with a digit, "
            "and not a C keyword",
        )
    op = call_pure_extern_op if pure else call_extern_op
    return Call(DataType.of(dtype), op, (StringImm(name), *map(builders.convert, args)))


def call_packed(name: str, *args: Any, dtype: DataType | str = int32) -> PrimExpr:
    """A call of a function registered with TVM's packed-function runtime (parse and print
    only: the C backend has no such runtime)."""
    if not isinstance(name, str):
        raise IRTypeError(
            f"call_packed needs a function name string, got {name!r}", rule="call_packed.name"
        )
    return Call(DataType.of(dtype), call_packed_op, (StringImm(name), *map(builders.convert, args)))


def ret(value: Any) -> PrimExpr:
    """Leave the function returning `value` (a function with a scalar return type)."""
    value = builders.convert(value)
    return Call(value.dtype, ret_op, (value,))


def address_of(load: Any) -> PrimExpr:
    """The address of the buffer element `load` reads (a handle)."""
    if not isinstance(load, BufferLoad):
        raise IRTypeError(
            f"address_of takes a buffer element such as A[i], got `{load}`",
            rule="address_of.argument",
        )
    return Call(DataType.of("handle"), address_of_op, (load,))


def _bool(condition: Any) -> PrimExpr:
    condition = builders.convert(condition)
    if not condition.dtype.is_bool:
        raise IRTypeError(f"expected a bool condition, got `{condition}` of {condition.dtype}")
    return condition


ACCESS_MASKS = {"r": 1, "w": 2, "rw": 3}


def type_annotation(dtype: DataType | str) -> PrimExpr:
    """A dtype as an expression (the first argument of tvm_access_ptr)."""
    return Call(DataType.of(dtype), type_annotation_op, ())


def access_ptr(ptype: Any, data: Any, offset: Any, extent: Any, mask: Any) -> PrimExpr:
    """TVM's tvm_access_ptr: a pointer to `extent` elements of type `ptype`'s dtype at `offset`
    into `data`, read (1), written (2) or both (3) through it."""
    if not (isinstance(ptype, Call) and ptype.op is type_annotation_op):
        raise IRTypeError(
            "tvm_access_ptr takes T.type_annotation(dtype) first", rule="access_ptr.type"
        )
    offset, extent = builders.convert(offset), builders.convert(extent)
    args = (ptype, builders.convert(data), offset, extent, builders.convert(mask))
    return Call(DataType.of("handle"), access_ptr_op, args)


def buffer_access_ptr(
    buffer: Any, access_mask: Any, offset: Any = 0, extent: Any = None
) -> PrimExpr:
    """`A.access_ptr("r")`: a pointer to the buffer's elements from `offset` (all by default)."""
    mask = ACCESS_MASKS.get(access_mask) if isinstance(access_mask, str) else access_mask
    if not isinstance(mask, int) or not 1 <= mask <= 3:
        raise IRTypeError(
            f'access_ptr needs an access mask "r", "w" or "rw", got {access_mask!r}',
            rule="access_ptr.mask",
        )
    if extent is None:
        size = builders.const(1)
        for dim in buffer.shape:
            size = builders.mul(size, dim)
        extent = builders.sub(size, offset)
    start = builders.add(buffer.elem_offset, offset)
    return access_ptr(type_annotation(buffer.dtype), buffer.data, start, extent, mask)


# Explicit forms of C-backend lowering decisions, written by passes of tessel/transform (never
# by users, so the script has no function for them: they print as T.call_intrin). The
# interpreter runs them with the semantics the C backend prints.
#
# tessel.exp_flush_below(x, floor): exp(x) where x > floor, 0 where x <= floor, NaN for NaN;
# `floor` is a float constant of x's element type (ClampVectorExp).
exp_flush_below_op = Op("tessel.exp_flush_below")
# tessel.deinterleaved_load(load): the value of `load`, a vector BufferLoad of every second
# element (index Ramp(base, 2, lanes)), read as contiguous loads and a shuffle (DeinterleaveLoads).
deinterleaved_load_op = Op("tessel.deinterleaved_load")
# The floor ClampVectorExp uses per float width: just above the log of the smallest normal
# number, so exp of any argument above it is a normal number (libmvec's fast path).
EXP_FLOORS: dict[int, float] = {32: -87.0, 64: -708.0}


def exp_flush_below(x: PrimExpr, floor: float) -> PrimExpr:
    """exp(x) with every result for an argument at or below `floor` made 0 (NaN stays NaN)."""
    if not x.dtype.is_float or x.dtype.bits not in EXP_FLOORS:
        raise IRTypeError(
            f"exp_flush_below needs a float32 or float64 argument, got {x.dtype}", rule="call.dtype"
        )
    return Call(x.dtype, exp_flush_below_op, (x, builders.const(floor, x.dtype.element)))


def deinterleaved_load(load: BufferLoad) -> PrimExpr:
    """`load` marked to be read as contiguous loads and a shuffle (its index has stride 2)."""
    index = load.indices[-1] if load.indices else None
    stride = getattr(index, "stride", None)
    if not (load.dtype.is_vector and builders.is_const_int(stride, 2)):
        raise IRTypeError(
            f"deinterleaved_load needs a vector load with index stride 2, got `{load}`",
            rule="call.argument",
        )
    return Call(load.dtype, deinterleaved_load_op, (load,))


reinterpret_op = Op("tir.reinterpret")  # not in ALL_OPS: printed with its dtype first


def reinterpret(dtype: DataType | str, value: Any) -> PrimExpr:
    """The bits of `value` read as `dtype` (TVM's reinterpret; `handle` makes a pointer)."""
    return Call(DataType.of(dtype), reinterpret_op, (builders.convert(value),))
