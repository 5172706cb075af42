"""Compiled calls of builtins (tessel/tir/builtin.py): math in the argument's dtype, bit
operations, reinterpret, if_then_else, likely, assume, undef, ret; calls of module functions
when the module is run (interpreter/module_calls.py); externs are refused."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from tessel.ir.expr import Call, GlobalVar
from tessel.support.dtype import DataType
from tessel.tir import builtin
from tessel.tir.interpreter import module_calls
from tessel.tir.interpreter.errors import UNDEF, InterpreterError, describe
from tessel.tir.interpreter.expr import choose_lanes
from tessel.tir.interpreter.values import Fn, int_wrapper
from tessel.tir.interpreter.views import CONSTANTS_SLOT

if TYPE_CHECKING:
    from tessel.tir.interpreter.compiler import Compiler


class FunctionReturn(Exception):  # noqa: N818  (control flow, not an error)
    """Raised by T.ret(value) to leave the function; run() returns the value."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def _erf(x: Any) -> Any:
    values = np.vectorize(math.erf, otypes=[np.float64])(x)
    return values.astype(np.result_type(x))[()]


def _sigmoid(x: Any) -> Any:
    one = np.ones_like(x)
    return (one / (one + np.exp(-x)))[()]


def _rsqrt(x: Any) -> Any:
    return (np.ones_like(x) / np.sqrt(x))[()]


def _exp10(x: Any) -> Any:
    return np.power(np.full_like(x, 10), x)[()]


def _exp_flush_below(x: Any, floor: Any) -> Any:
    """tessel.exp_flush_below as the C backend prints it: exp of the argument clamped to the
    floor (NaN stays NaN), 0 in the lanes the clamp reached."""
    x = np.asarray(x)
    clamped = np.maximum(x, np.asarray(floor, x.dtype))
    result = np.exp(clamped)
    return np.where(clamped == floor, np.zeros_like(result), result)[()]


# T.round rounds halfway cases to even, as NumPy does and as C's nearbyint does in the default
# rounding mode (the C backend prints T.round as nearbyint, not round).
UNARY_MATH: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "exp2": np.exp2, "exp10": _exp10, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": _rsqrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "erf": _erf, "sigmoid": _sigmoid,
    "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "trunc": np.trunc, "nearbyint": np.rint,
}  # fmt: skip
BINARY_MATH: dict[str, Callable[[Any, Any], Any]] = {
    "pow": np.power, "atan2": np.arctan2, "fmod": np.fmod, "hypot": np.hypot,
    "copysign": np.copysign,
}  # fmt: skip
FLOAT_TESTS: dict[str, Callable[[Any], Any]] = {
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
}  # fmt: skip


def _checked_shift(dtype: DataType, shift: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A shift that raises where C leaves it undefined (amount negative or >= the width)."""
    bits = dtype.bits

    def run(x: Any, amount: Any) -> Any:
        if np.any(np.less(amount, 0)) or np.any(np.greater_equal(amount, bits)):
            raise InterpreterError(
                f"shift of a {dtype} by {amount} (outside [0, {bits}))",
                rule="interpreter.shift-range",
            )
        return shift(x, amount)

    return run


def _bitwise_function(name: str, dtype: DataType) -> Callable[[Any, Any], Any]:
    if dtype.is_vector:
        vector_ops = {
            "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
            "bitwise_xor": np.bitwise_xor, "shift_left": np.left_shift,
            "shift_right": np.right_shift,
        }  # fmt: skip
        op = vector_ops[name]
        return _checked_shift(dtype.element, op) if name.startswith("shift") else op
    if name == "shift_left":
        wrap = int_wrapper(dtype)
        return _checked_shift(dtype, lambda x, n: wrap(x << n))
    if name == "shift_right":  # Python's >> is arithmetic on negative ints, as on signed C ints
        return _checked_shift(dtype, operator.rshift)
    # and/or/xor of in-range two's complement values stay in range
    return {"bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor}[
        name
    ]


def _unary(function: Callable[[Any], Any], c: Compiler, node: Call) -> Fn:
    x = c.expr(node.args[0])
    return lambda env: function(x(env))


def _binary(function: Callable[[Any, Any], Any], c: Compiler, node: Call) -> Fn:
    x, y = c.expr(node.args[0]), c.expr(node.args[1])
    return lambda env: function(x(env), y(env))


def _fail_at_run_time(message: str, rule: str) -> Fn:
    """Code the interpreter cannot run fails when reached, so unreached code does not matter."""

    def fail(env: list) -> NoReturn:
        raise InterpreterError(message, rule=rule)

    return fail


def compile_if_then_else(c: Compiler, node: Call) -> Fn:
    """Evaluate only the chosen side (per lane, both sides, for a vector condition)."""
    condition, true_value, false_value = (c.expr(a) for a in node.args)
    if node.args[0].dtype.is_vector:
        return lambda env: choose_lanes(condition(env), true_value(env), false_value(env))
    return lambda env: true_value(env) if condition(env) else false_value(env)


def compile_assume(c: Compiler, node: Call) -> Fn:
    """T.assume(c): a buffer constraint; a violated one is an error (the caller broke it)."""
    condition = c.expr(node.args[0])

    def assume(env: list) -> int:
        if not condition(env):
            raise InterpreterError(
                f"T.assume({describe(node.args[0])}) is violated: the arguments break a buffer "
                "constraint of the function",
                rule="interpreter.assume",
            )
        return 0

    return assume


def compile_ret(c: Compiler, node: Call) -> Fn:
    """T.ret(value): leave the function."""
    value = c.expr(node.args[0])

    def ret(env: list) -> NoReturn:
        raise FunctionReturn(value(env))

    return ret


def compile_reinterpret(c: Compiler, node: Call) -> Fn:
    """T.reinterpret(value): the value's bits read as the call's dtype, of the same total width
    (lanes times bits); NaN payloads and signed zeros keep their bits."""
    source, target = node.args[0].dtype, node.dtype
    if any(t.element.is_bool or t.element.is_handle for t in (source, target)) or (
        source.bits * source.lanes != target.bits * target.lanes
    ):
        return _fail_at_run_time(
            f"T.reinterpret from {source} to {target}: only numbers of the same total width "
            "have common bits",
            "interpreter.reinterpret",
        )
    value = c.expr(node.args[0])
    source_np, target_np = source.element.numpy, target.element.numpy

    def reinterpret(env: list) -> Any:
        bits = np.array(value(env), dtype=source_np).reshape(-1).view(target_np)
        return bits if target.is_vector else bits[0]

    return reinterpret


_CONTROL_AND_BITS: dict[Any, Callable[[Compiler, Call], Fn]] = {
    builtin.ret_op: compile_ret,
    builtin.reinterpret_op: compile_reinterpret,
}


def _compile_special(c: Compiler, node: Call) -> Fn | None:
    op = node.op
    if op is builtin.undef_op:
        return lambda env: UNDEF
    if op is builtin.likely_op:
        return c.expr(node.args[0])
    if op is builtin.if_then_else_op:
        return compile_if_then_else(c, node)
    if op is builtin.assume_op:
        return compile_assume(c, node)
    if op in _CONTROL_AND_BITS:
        return _CONTROL_AND_BITS[op](c, node)
    if op is builtin.exp_flush_below_op:
        return _binary(_exp_flush_below, c, node)
    if op is builtin.deinterleaved_load_op:  # how C reads the load; its value is the load's
        return c.expr(node.args[0])
    if op is builtin.bitwise_not_op:
        wrap = None if node.dtype.is_vector else int_wrapper(node.dtype)
        return _unary(np.invert if wrap is None else (lambda x: wrap(~x)), c, node)
    if op in (builtin.call_extern_op, builtin.call_pure_extern_op, builtin.call_packed_op):
        name = getattr(node.args[0], "value", "?")
        return _fail_at_run_time(
            f"the interpreter cannot call the external function `{name}` "
            f"({'T.call_packed' if op is builtin.call_packed_op else 'T.call_extern'})",
            "interpreter.call-extern",
        )
    return None


def compile_module_call(c: Compiler, node: Call) -> Fn:
    """A call of a module function (tessel.tir.module_calls): pointers into this env's memory
    and scalars, bound into a fresh env of the callee; the call's value is the status 0."""
    assert isinstance(node.op, GlobalVar)
    name = node.op.name_hint
    if c.callees is None:
        return _fail_at_run_time(
            f"the function calls the module function `{name}`; run the IRModule that holds "
            "both (interpreter.run(mod, ..., name=...))",
            "interpreter.module-call",
        )
    callee = c.callees(name)
    arg_fns = [
        module_calls.compile_argument(c, arg, param)
        for arg, param in zip(node.args, callee.func.params, strict=True)
    ]

    def call(env: list) -> int:
        callee.run_from(env[CONSTANTS_SLOT], [f(env) for f in arg_fns])
        return 0

    return call


def compile_call(c: Compiler, node: Call) -> Fn:
    """A builtin call; an unknown op fails when it is reached."""
    if isinstance(node.op, GlobalVar):
        return compile_module_call(c, node)
    special = _compile_special(c, node)
    if special is not None:
        return special
    name = node.op.name.removeprefix("tir.")
    if name in UNARY_MATH:
        return _unary(UNARY_MATH[name], c, node)
    if name in BINARY_MATH:
        return _binary(BINARY_MATH[name], c, node)
    if name in FLOAT_TESTS:
        return _unary(FLOAT_TESTS[name], c, node)
    if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
        return _binary(_bitwise_function(name, node.dtype), c, node)
    return _fail_at_run_time(
        f"the interpreter does not know the builtin `{node.op.name}`", "interpreter.unsupported"
    )


COMPILERS = {Call: compile_call}
