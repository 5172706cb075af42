"""Checking and converting a compiled function's arguments before any C code runs.

Arrays must have the parameter's rank, dtype and shape and be C-contiguous (a strided view is
rejected, never silently copied, because the function writes its outputs in place), and an
array the function writes must be writeable (a read-only one is refused, not written). Symbolic
sizes are bound from the first argument that mentions them and checked on the rest. A function
compiled with `restrict` pointers is refused arguments that overlap in memory where one of them
is written: that call would be undefined behaviour in C, so it is an error here instead.
"""

from __future__ import annotations

import ctypes
import functools
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.support.abi import FunctionSignature, ParamSpec
from tessel.support.dtype import DataType

CTYPES: dict[str, type] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "bool": ctypes.c_bool,
    "bfloat16": ctypes.c_uint16,  # its bits, as the C code holds it (codegen/c_types.py)
}  # fmt: skip


def argument_types(signature: FunctionSignature) -> list[type]:
    """The ctypes of the C function's arguments, in order."""
    types = [ctypes.c_void_p if p.kind == "buffer" else CTYPES[p.dtype] for p in signature.params]
    table = [ctypes.c_void_p] if signature.constants else []
    returned = [ctypes.c_void_p] if signature.returns is not None else []
    return types + [ctypes.c_int64] * len(signature.size_args) + table + returned


@dataclass(frozen=True, slots=True)
class BoundArguments:
    """Arguments fixed once for many calls (a compiled model's weights), already checked: the C
    values with theirs filled in (None at the free positions), the sizes they bind, their memory
    spans for the overlap check, the positions left to each call, and the arrays, kept alive."""

    values: tuple[Any, ...]
    sizes: dict[str, int]
    spans: tuple[tuple[ParamSpec, int, int], ...]
    free: tuple[int, ...]
    arrays: tuple[Any, ...]


def bind_arguments(signature: FunctionSignature, fixed: dict[int, Any]) -> BoundArguments:
    """Check the arguments at the positions of `fixed` once; ValueError as `c_arguments`."""
    for position in fixed:
        if not 0 <= position < len(signature.params):
            raise ValueError(f"`{signature.name}` has no parameter at position {position}")
    values: list[Any] = [None] * len(signature.params)
    sizes: dict[str, int] = {}
    spans = _convert(signature.params, sorted(fixed.items()), values, sizes)
    _check_no_alias(signature.name, spans)
    free = tuple(i for i in range(len(signature.params)) if i not in fixed)
    return BoundArguments(tuple(values), sizes, tuple(spans), free, tuple(fixed.values()))


def c_arguments(
    signature: FunctionSignature, args: Sequence[Any], bound: BoundArguments | None = None
) -> list[Any]:
    """The C arguments for a call with `args` (the parameters `bound` leaves free, in order);
    ValueError naming the parameter at fault."""
    params = signature.params
    free = bound.free if bound is not None else range(len(params))
    if len(args) != len(free):
        names = ", ".join(params[i].name for i in free)
        raise ValueError(
            f"`{signature.name}` takes {len(free)} arguments ({names}), got {len(args)}"
        )
    if bound is None:
        values: list[Any] = [None] * len(params)
        sizes: dict[str, int] = {}
        checked: tuple[tuple[ParamSpec, int, int], ...] = ()
    else:
        values, sizes, checked = list(bound.values), dict(bound.sizes), bound.spans
    spans = _convert(params, zip(free, args, strict=True), values, sizes)
    _check_no_alias(signature.name, spans, checked)
    if signature.size_args:
        values += [sizes[name] for name in signature.size_args]
    return values


def _convert(
    params: Sequence[ParamSpec],
    items: Iterable[tuple[int, Any]],
    values: list[Any],
    sizes: dict[str, int],
) -> list[tuple[ParamSpec, int, int]]:
    """Put the C values of (position, argument) pairs into `values`, binding `sizes`; the
    buffers' memory spans."""
    items = list(items)
    for i, arg in items:
        param = params[i]
        if param.kind == "scalar":  # scalars first: they bind the sizes they name
            values[i] = _scalar(param, arg)
            if param.symbol is not None:
                sizes[param.symbol] = int(values[i])
    spans: list[tuple[ParamSpec, int, int]] = []
    for i, arg in items:
        param = params[i]
        if param.kind == "buffer":
            array = _array(param, arg, sizes)
            values[i] = address = _address(array)
            if array.nbytes:
                spans.append((param, address, address + array.nbytes))
    return spans


def _address(array: np.ndarray) -> int:
    """The address of an array's first element. Through the buffer protocol where the array
    lends a writable one (0.2 us; `__array_interface__` and `.ctypes` build a dict or a helper
    object at every use, 0.7 us: a small model's call checks two or three arrays), else from
    its array interface (a read-only input, an empty array)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        return array.__array_interface__["data"][0]


def _check_no_alias(
    function: str,
    spans: list[tuple[ParamSpec, int, int]],
    checked: Sequence[tuple[ParamSpec, int, int]] = (),
) -> None:
    """Refuse overlapping arrays (parameter, first byte, end) where one is written through a
    `restrict` pointer: among `spans`, and between `spans` and the `checked` ones (whose own
    pairs were checked when they were bound)."""
    for i, (first, start, end) in enumerate(spans):
        for second, other_start, other_end in (*spans[i + 1 :], *checked):
            if start >= other_end or other_start >= end:
                continue  # apart: the usual case, decided before any attribute is read
            if (first.restrict or second.restrict) and (first.written or second.written):
                target = first.name if first.written else second.name
                raise ValueError(
                    f"arguments `{first.name}` and `{second.name}` of `{function}` overlap in "
                    f"memory and `{target}` is written; the function is compiled for distinct "
                    "buffers (restrict pointers). Pass separate arrays, or compile it with "
                    'T.func_attr({"tir.noalias": False}) to allow aliasing'
                )


def _scalar(param: ParamSpec, arg: Any) -> Any:
    dtype = np.dtype(param.dtype)
    if dtype.kind == "b":
        if not isinstance(arg, bool | np.bool_):
            raise ValueError(f"argument `{param.name}`: expected a bool, got {arg!r}")
        return bool(arg)
    if dtype.kind in "iu":
        if not isinstance(arg, numbers.Integral) or isinstance(arg, bool):
            raise ValueError(f"argument `{param.name}`: expected an {dtype} integer, got {arg!r}")
        info = np.iinfo(dtype)
        if not info.min <= int(arg) <= info.max:
            raise ValueError(
                f"argument `{param.name}`: {arg} does not fit in {dtype} ([{info.min}, {info.max}])"
            )
        return int(arg)
    if not isinstance(arg, numbers.Real | dtype.type):  # ml_dtypes' bfloat16 is no Real
        raise ValueError(f"argument `{param.name}`: expected a {dtype} number, got {arg!r}")
    if param.dtype == "bfloat16":  # rounded as a float32 -> bfloat16 cast rounds
        with np.errstate(over="ignore"):
            return int(np.array(arg, np.float32).astype(dtype).view(np.uint16))
    return float(arg)


def _as_array(param: ParamSpec, arg: Any) -> np.ndarray:
    if isinstance(arg, np.ndarray):
        return arg
    if hasattr(arg, "__dlpack__"):
        return np.from_dlpack(arg)  # shares memory: the function writes into the caller's tensor
    raise ValueError(
        f"argument `{param.name}`: expected a NumPy array (or an object with __dlpack__) of "
        f"{param.dtype}, got {type(arg).__name__}"
    )


def _array(param: ParamSpec, arg: Any, sizes: dict[str, int]) -> np.ndarray:
    array = _as_array(param, arg)
    if array.ndim != len(param.shape):
        raise ValueError(
            f"argument `{param.name}`: expected a {len(param.shape)}-dimensional array, got "
            f"{array.ndim} dimensions (shape {array.shape})"
        )
    if array.dtype != array_dtype(param.dtype):
        addresses = " (addresses, as np.uintp)" if param.dtype == "handle" else ""
        raise ValueError(
            f"argument `{param.name}`: expected dtype {param.dtype}{addresses}, got {array.dtype}"
        )
    _check_shape(param, array.shape, sizes)
    flags = array.flags
    if param.written and not flags.writeable:
        raise ValueError(
            f"argument `{param.name}`: the function writes this parameter, but the array is "
            "read-only; pass a writeable array (a copy, or one with flags.writeable set)"
        )
    if not flags.c_contiguous:
        raise ValueError(
            f"argument `{param.name}`: expected a C-contiguous array, got strides "
            f"{array.strides}; pass np.ascontiguousarray(...) (the function writes in place, "
            "so Tessel does not copy silently)"
        )
    return array


@functools.cache
def array_dtype(name: str) -> np.dtype:
    """The NumPy dtype of an array argument of `name`'s elements: a `handle` buffer (a table
    of pointers, such as a model main's weights) is an array of addresses, a `string` one an
    array of string records (tessel/runtime/strings.py)."""
    if name == "handle":
        return np.dtype(np.uintp)
    return DataType.of(name).numpy if name == "string" else np.dtype(name)


def _check_shape(param: ParamSpec, shape: tuple[int, ...], sizes: dict[str, int]) -> None:
    if shape == param.shape:  # a constant shape matched (one with sizes never equals: strs)
        return
    for want, got in zip(param.shape, shape, strict=True):
        if isinstance(want, str) and want not in sizes:
            sizes[want] = got
    expected = tuple(sizes[w] if isinstance(w, str) else w for w in param.shape)
    if expected == shape:
        return
    symbols = [f"{w} = {sizes[w]}" for w in param.shape if isinstance(w, str)]
    bound = f" (bound earlier: {', '.join(symbols)})" if symbols else ""
    raise ValueError(f"argument `{param.name}`: expected shape {expected}, got {shape}{bound}")
