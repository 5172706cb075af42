"""Compiled scalar and vector expressions: variables, constants, arithmetic, logic, vectors."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    BinaryOp,
    Broadcast,
    Cast,
    CmpOp,
    FloatImm,
    IntImm,
    Let,
    Not,
    Or,
    Ramp,
    Select,
    StringImm,
    Var,
)
from tessel.tir.interpreter.casts import cast_function
from tessel.tir.interpreter.errors import UNDEF
from tessel.tir.interpreter.values import Fn, binary_function, constant

if TYPE_CHECKING:
    from tessel.tir.interpreter.compiler import Compiler


def compile_var(c: Compiler, node: Var) -> Fn:
    """Read the variable's slot."""
    slot = c.var_slot(node)
    return lambda env: env[slot]


def compile_constant(c: Compiler, node: IntImm | FloatImm) -> Fn:
    """A constant, converted once to its exact dtype."""
    value = constant(node.value, node.dtype)
    return lambda env: value


def compile_string(c: Compiler, node: StringImm) -> Fn:
    """A string (assert messages, extern names)."""
    value = node.value
    return lambda env: value


def compile_cast(c: Compiler, node: Cast) -> Fn:
    """Convert with C semantics (see casts.py); a cast of T.undef() is still undefined (the
    parser writes `T.Cast("float32", T.undef())` where an untyped undef meets a float)."""
    convert = cast_function(node.value.dtype, node.dtype)
    value = c.expr(node.value)

    def cast(env: list) -> Any:
        original = value(env)
        return UNDEF if original is UNDEF else convert(original)

    return cast


def compile_binary(c: Compiler, node: BinaryOp) -> Fn:
    """Arithmetic in the operands' dtype (integers wrap; see values.py)."""
    op = binary_function(type(node), node.dtype)
    a, b = c.expr(node.a), c.expr(node.b)
    return lambda env: op(a(env), b(env))


_COMPARISONS = {
    EQ: operator.eq, NE: operator.ne, LT: operator.lt, LE: operator.le, GT: operator.gt,
    GE: operator.ge,
}  # fmt: skip


def compile_comparison(c: Compiler, node: CmpOp) -> Fn:
    """A comparison; a bool per lane (IEEE for floats: NaN compares unequal)."""
    op = _COMPARISONS[type(node)]
    a, b = c.expr(node.a), c.expr(node.b)
    return lambda env: op(a(env), b(env))


def compile_and(c: Compiler, node: And) -> Fn:
    """Logical and; a scalar `and` short-circuits as C's `&&` does."""
    a, b = c.expr(node.a), c.expr(node.b)
    if node.dtype.is_vector:
        return lambda env: np.logical_and(a(env), b(env))
    return lambda env: bool(a(env)) and bool(b(env))


def compile_or(c: Compiler, node: Or) -> Fn:
    """Logical or; a scalar `or` short-circuits as C's `||` does."""
    a, b = c.expr(node.a), c.expr(node.b)
    if node.dtype.is_vector:
        return lambda env: np.logical_or(a(env), b(env))
    return lambda env: bool(a(env)) or bool(b(env))


def compile_not(c: Compiler, node: Not) -> Fn:
    """Logical negation."""
    a = c.expr(node.a)
    if node.dtype.is_vector:
        return lambda env: np.logical_not(a(env))
    return lambda env: not a(env)


def choose_lanes(condition: Any, true_value: Any, false_value: Any) -> Any:
    """Per-lane choice of a vector condition; T.undef() survives only where it is chosen."""
    if true_value is UNDEF or false_value is UNDEF:
        if np.all(condition) and true_value is not UNDEF:
            return true_value
        if not np.any(condition) and false_value is not UNDEF:
            return false_value
        return UNDEF
    return np.where(condition, true_value, false_value)


def compile_select(c: Compiler, node: Select) -> Fn:
    """Select: both sides are evaluated, then one is chosen (per lane for a vector)."""
    condition = c.expr(node.condition)
    true_value, false_value = c.expr(node.true_value), c.expr(node.false_value)
    if node.condition.dtype.is_vector:
        return lambda env: choose_lanes(condition(env), true_value(env), false_value(env))

    def select(env: list) -> Any:
        chosen, t, f = condition(env), true_value(env), false_value(env)
        return t if chosen else f

    return select


def compile_ramp(c: Compiler, node: Ramp) -> Fn:
    """The vector base + i * stride for i in [0, lanes), in the element dtype (wrapping)."""
    base, stride = c.expr(node.base), c.expr(node.stride)
    steps = np.arange(node.lanes).astype(node.dtype.element.numpy)
    steps.setflags(write=False)
    return lambda env: base(env) + steps * stride(env)


def compile_broadcast(c: Compiler, node: Broadcast) -> Fn:
    """`lanes` copies of a scalar (a broadcast T.undef() stays undefined)."""
    value, lanes, dtype = c.expr(node.value), node.lanes, node.dtype.element.numpy

    def broadcast(env: list) -> Any:
        scalar = value(env)
        if scalar is UNDEF:
            return UNDEF
        return np.full(lanes, scalar, dtype=dtype)

    return broadcast


def compile_let(c: Compiler, node: Let) -> Fn:
    """Bind the variable, then evaluate the body."""
    slot, value = c.var_slot(node.var), c.expr(node.value)
    with c.binding([node.var]):
        body = c.expr(node.body)

    def let(env: list) -> Any:
        env[slot] = value(env)
        return body(env)

    return let


COMPILERS = {
    Var: compile_var, IntImm: compile_constant, FloatImm: compile_constant,
    StringImm: compile_string, Cast: compile_cast, BinaryOp: compile_binary,
    CmpOp: compile_comparison, And: compile_and, Or: compile_or, Not: compile_not,
    Select: compile_select, Ramp: compile_ramp, Broadcast: compile_broadcast, Let: compile_let,
}  # fmt: skip
