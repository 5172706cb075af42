"""Binding a call's arguments to a PrimFunc's parameters, with checks that name the parameter.

A buffer parameter takes a NumPy array of the buffer's dtype, rank and shape; the function reads
and writes it in place. Variables in parameter shapes (and strides, elem_offset) are bound from
the arrays on first sight and checked on every later one. A scalar parameter takes a Python or
NumPy number that fits its dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tessel.ir.expr import PrimExpr, Var
from tessel.tir.analysis.written import written_data
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.interpreter.errors import InterpreterError, describe, is_poison
from tessel.tir.interpreter.values import Fn, constant
from tessel.tir.interpreter.views import make_view, span_of
from tessel.tir.layout import row_major_strides

if TYPE_CHECKING:
    from tessel.tir.interpreter.compiler import Compiler


def _argument_error(param: Var, message: str) -> InterpreterError:
    return InterpreterError(f"argument `{param.name}`: {message}", rule="interpreter.argument")


def defined_by_parameters(func: PrimFunc) -> list[Var]:
    """The variables a call defines: scalar parameters and bare variables in buffer fields."""
    defined = [p for p in func.params if p not in func.buffer_map]
    for buffer in func.param_buffers():
        for field in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(field, Var) and field not in defined:
                defined.append(field)
    return defined


def _scalar_value(param: Var, value: Any) -> Any:
    """The interpreter's value for a scalar argument of the parameter's dtype."""
    dtype = param.dtype
    if dtype.is_bool and isinstance(value, bool | np.bool_):
        return bool(value)
    if dtype.is_integer and isinstance(value, int | np.integer) and not isinstance(value, bool):
        if not dtype.min_value() <= int(value) <= dtype.max_value():
            raise _argument_error(param, f"{value} does not fit in {dtype}")
        return int(value)
    numbers = (int, float, np.integer, np.floating)
    if dtype.is_float and isinstance(value, (*numbers, dtype.numpy.type)):  # bfloat16's too
        return constant(value, dtype)
    raise _argument_error(param, f"expected a {dtype} scalar, got {value!r}")


def _check_array(param: Var, buffer: Buffer, array: Any, written: bool) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise _argument_error(
            param, f"expected a NumPy array for buffer `{buffer.name}`, got {type(array).__name__}"
        )
    if written and not array.flags.writeable:
        raise _read_only(param)
    if buffer.dtype.is_vector:
        raise _argument_error(
            param, f"vector-typed parameter buffers ({buffer.dtype}) are not supported"
        )
    if array.dtype != buffer.dtype.numpy:
        raise _argument_error(param, f"expected dtype {buffer.dtype}, got {array.dtype}")
    if array.ndim != len(buffer.shape):
        declared = [describe(e) for e in buffer.shape]
        raise _argument_error(
            param,
            f"expected rank {len(buffer.shape)} (shape {declared}), got shape {list(array.shape)}",
        )
    return array


def _read_only(param: Var) -> InterpreterError:
    return _argument_error(
        param,
        "the function writes this parameter, but the array is read-only; pass a writeable "
        "array (a copy, or one with flags.writeable set)",
    )


class _FieldMatcher:
    """Binds or checks parameter fields (shape, strides, elem_offset) against actual values:
    a bare unbound variable is bound; anything else is evaluated and compared."""

    def __init__(self, c: Compiler) -> None:
        self._c = c
        self._compiled: dict[int, tuple[int | None, Fn]] = {}

    def prepare(self, field: PrimExpr) -> None:
        """Compile a field once."""
        slot = self._c.var_slot(field) if isinstance(field, Var) else None
        self._compiled[id(field)] = (slot, self._c.expr(field))

    def match(self, env: list, param: Var, field: PrimExpr, actual: int, what: str) -> None:
        """Bind `field` to `actual` if it is an unbound variable, else check it equals `actual`."""
        slot, evaluate = self._compiled[id(field)]
        if slot is not None and is_poison(env[slot]):
            env[slot] = actual
            return
        expected = evaluate(env)
        if expected != actual:
            raise _argument_error(
                param, f"{what} must be {expected} (`{describe(field)}`), got {actual}"
            )


def _array_strides(param: Var, array: np.ndarray) -> tuple[int, ...]:
    itemsize = array.itemsize
    if any(s < 0 or s % itemsize for s in array.strides):
        raise _argument_error(
            param, f"strides {array.strides} (bytes) are not non-negative multiples of the itemsize"
        )
    return tuple(s // itemsize for s in array.strides)


def _flat_memory(array: np.ndarray, strides: tuple[int, ...]) -> np.ndarray:
    """A flat 1-D view of the memory an array spans (its first to its last element)."""
    if array.size == 0:
        return array.reshape(-1)
    count = span_of(array.shape, strides, 0)[1] + 1
    return as_strided(array, (count,), (array.itemsize,))


def _compile_buffer_param(c: Compiler, matcher: _FieldMatcher, param: Var, buffer: Buffer) -> Any:
    for field in (*buffer.shape, *buffer.strides, buffer.elem_offset):
        matcher.prepare(field)
    slot = c.buffer_slot(buffer)
    storage_slots = (c.storage_slot(buffer.data), c.storage_slot(param))

    def bind_shape(env: list, array: np.ndarray, bare_variables: bool) -> None:
        for k, (field, actual) in enumerate(zip(buffer.shape, array.shape, strict=False)):
            if isinstance(field, Var) == bare_variables:
                matcher.match(env, param, field, actual, f"dimension {k} of buffer `{buffer.name}`")

    def bind_layout(env: list, array: np.ndarray) -> None:
        if buffer.strides:
            strides = _array_strides(param, array)
            for k, (field, actual) in enumerate(zip(buffer.strides, strides, strict=False)):
                matcher.match(env, param, field, actual, f"stride {k} of buffer `{buffer.name}`")
        elif array.flags.c_contiguous:
            strides = row_major_strides(array.shape, 1)
        else:
            raise _argument_error(
                param, "the array must be C-contiguous (the buffer declares no strides)"
            )
        matcher.match(env, param, buffer.elem_offset, 0, f"elem_offset of buffer `{buffer.name}`")
        storage = _flat_memory(array, strides)
        for storage_slot in storage_slots:
            env[storage_slot] = storage
        env[slot] = make_view(buffer, storage, tuple(array.shape), strides, 0)

    return bind_shape, bind_layout


def compile_argument_binder(c: Compiler, func: PrimFunc) -> Any:
    """A function (env, args) -> None binding a call's arguments into the env."""
    matcher = _FieldMatcher(c)
    scalar_params = [
        (p, c.var_slot(p), c.storage_slot(p) if p.dtype.is_handle else None)
        for p in func.params
        if p not in func.buffer_map
    ]
    buffer_params = [
        (p, *_compile_buffer_param(c, matcher, p, func.buffer_map[p]))
        for p in func.params
        if p in func.buffer_map
    ]
    positions = {p: k for k, p in enumerate(func.params)}
    written = written_data(func)
    written_params = {p for p in func.params if _memory_of(func, p) in written}

    def bind(env: list, args: Sequence[Any]) -> None:
        if len(args) != len(func.params):
            names = ", ".join(p.name for p in func.params)
            raise InterpreterError(
                f"the function takes {len(func.params)} arguments ({names}), got {len(args)}",
                rule="interpreter.argument",
            )
        for param, slot, storage_slot in scalar_params:
            value = args[positions[param]]
            if storage_slot is None:
                env[slot] = _scalar_value(param, value)
            else:
                memory = _handle_memory(param, value)
                if param in written_params and not memory.flags.writeable:
                    raise _read_only(param)
                env[slot] = env[storage_slot] = memory
        arrays = [
            (
                _check_array(
                    param, func.buffer_map[param], args[positions[param]], param in written_params
                ),
                shape,
                layout,
            )
            for param, shape, layout in buffer_params
        ]
        # Variables first (a later parameter's shape may define one an earlier one uses), then
        # shape expressions, then strides and offsets.
        for bare_variables in (True, False):
            for array, bind_shape, _ in arrays:
                bind_shape(env, array, bare_variables)
        for array, _, bind_layout in arrays:
            bind_layout(env, array)

    return bind


def _memory_of(func: PrimFunc, param: Var) -> Var:
    """The data variable of a buffer parameter; a bare handle parameter is its own."""
    buffer = func.buffer_map.get(param)
    return param if buffer is None else buffer.data


def _handle_memory(param: Var, value: Any) -> np.ndarray:
    """The flat memory behind a handle parameter that has no buffer (a contiguous array)."""
    if not isinstance(value, np.ndarray) or not value.flags.c_contiguous:
        raise _argument_error(param, "a handle parameter takes a C-contiguous NumPy array")
    return value.reshape(-1)
