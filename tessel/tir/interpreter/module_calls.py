"""Calls between module functions (tessel.tir.module_calls): pointers into the caller's memory.

A pointer argument is (memory, byte offset): the flat memory of a data variable (an array, an
allocation's FreshMemory with its written mask, a constant) and where in it the pointer points.
The callee runs in its own env with each buffer parameter a dense view of that memory from the
offset, so its stores land in the caller's memory and mark it written, and its reads of memory
nothing wrote are refused as in the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tessel.ir.expr import Call, IntImm, PrimExpr, Var
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.interpreter.access import out_of_bounds
from tessel.tir.interpreter.errors import InterpreterError
from tessel.tir.interpreter.values import Fn
from tessel.tir.interpreter.views import FreshMemory, make_view
from tessel.tir.layout import row_major_strides
from tessel.tir.module_calls import is_pointer

if TYPE_CHECKING:
    from tessel.tir.interpreter.compiler import Compiler


class Pointer(NamedTuple):
    """Where a pointer argument points: flat memory, and a byte offset into it."""

    memory: Any  # np.ndarray | FreshMemory
    byte_offset: int


def memory_from(pointer: Pointer, itemsize: int, name: str) -> Any:
    """The memory from `pointer` on, as whole elements of `itemsize` bytes (for a view)."""
    memory, offset = pointer
    values = memory.values if isinstance(memory, FreshMemory) else memory
    flat = np.ascontiguousarray(values).reshape(-1) if values.ndim != 1 else values
    data = flat.view(np.uint8)
    if not 0 <= offset <= data.size:
        raise InterpreterError(
            f"the pointer passed for `{name}` is {offset} bytes into memory of {data.size}",
            rule="interpreter.module-call-pointer",
        )
    end = offset + (data.size - offset) // itemsize * itemsize
    if isinstance(memory, FreshMemory):
        return FreshMemory(data[offset:end], memory.written[offset:end])
    return data[offset:end]


def compile_pointer(c: Compiler, arg: PrimExpr) -> Fn:
    """A closure computing the Pointer a pointer argument (tessel.tir.module_calls) gives."""
    if isinstance(arg, Var):
        slot = c.storage_slot(arg)
        return lambda env: Pointer(env[slot], 0)
    assert isinstance(arg, Call)
    if arg.op is builtin.access_ptr_op:
        # access_ptr's args[1] is the data Var
        slot, offset = c.storage_slot(arg.args[1]), c.expr(arg.args[2])  # type: ignore[arg-type]
        itemsize = arg.args[0].dtype.itemsize
        return lambda env: Pointer(env[slot], offset(env) * itemsize)
    load = arg.args[0]
    assert isinstance(load, BufferLoad)
    c.note_access(load.buffer)
    slot, index_fns = c.buffer_slot(load.buffer), [c.expr(i) for i in load.indices]
    itemsize = load.buffer.dtype.itemsize

    def address(env: list) -> Pointer:
        _, shape, layout = env[slot]
        indices = [f(env) for f in index_fns]
        if not all(0 <= i < n for i, n in zip(indices, shape, strict=True)):
            out_of_bounds("T.address_of", load.buffer, indices, shape)
        strides = layout.strides
        element = layout.elem_offset + sum(i * s for i, s in zip(indices, strides, strict=True))
        return Pointer(layout.storage, element * itemsize)

    return address


class CalleeBinder:
    """Binds a call's arguments (Pointers and scalars) into a fresh env of the callee."""

    def __init__(self, c: Compiler, func: PrimFunc) -> None:
        self.func = func
        self._scalars: list[tuple[int, Var]] = []
        self._pointers: list[tuple[int, Var, tuple[int, ...]]] = []
        self._buffers: list[tuple[int, Any, tuple[int, ...], int, list[Fn]]] = []
        for k, param in enumerate(func.params):
            buffer = func.buffer_map.get(param)
            if buffer is None and not param.dtype.is_handle:
                self._scalars.append((k, param))
                continue
            storage = (c.storage_slot(param),)
            if buffer is None:  # a bare handle: its own memory (and value)
                self._pointers.append((k, param, (*storage, c.var_slot(param))))
                continue
            slots = (*storage, c.storage_slot(buffer.data))
            shape = [c.expr(e) for e in buffer.shape]
            self._buffers.append((k, buffer, slots, c.buffer_slot(buffer), shape))
        self._scalar_slots = {param: c.var_slot(param) for _, param in self._scalars}

    def bind(self, env: list, args: Sequence[Any]) -> None:
        for k, param in self._scalars:
            env[self._scalar_slots[param]] = args[k]
        for k, param, slots in self._pointers:
            element = param.type_annotation.element_type if param.type_annotation else None
            memory = memory_from(args[k], element.itemsize if element else 1, param.name)
            for slot in slots:
                env[slot] = memory
        for k, buffer, slots, slot, shape_fns in self._buffers:
            memory = memory_from(args[k], buffer.dtype.itemsize, buffer.name)
            for storage_slot in slots:
                env[storage_slot] = memory
            shape = tuple(f(env) for f in shape_fns)
            env[slot] = make_view(buffer, memory, shape, row_major_strides(shape, 1), 0)


def scalar_argument(value: Any, param: Var) -> Any:
    """A scalar argument as the callee's parameter holds it (an int constant widened, as C)."""
    if param.dtype.is_float:
        return param.dtype.numpy.type(value)
    return value


def compile_argument(c: Compiler, arg: PrimExpr, param: Var) -> Fn:
    """The closure computing one argument of a module call."""
    if is_pointer(arg):
        return compile_pointer(c, arg)
    value = c.expr(arg)
    if isinstance(arg, IntImm) or arg.dtype == param.dtype:
        return value
    return lambda env: scalar_argument(value(env), param)
