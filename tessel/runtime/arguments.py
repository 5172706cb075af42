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
from collections.abc import Sequence
from typing import Any

import numpy as np

from tessel.support.abi import FunctionSignature, ParamSpec

CTYPES: dict[str, type] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "bool": ctypes.c_bool,
}  # fmt: skip


def argument_types(signature: FunctionSignature) -> list[type]:
    """The ctypes of the C function's arguments, in order."""
    types = [ctypes.c_void_p if p.kind == "buffer" else CTYPES[p.dtype] for p in signature.params]
    table = [ctypes.c_void_p] if signature.constants else []
    return types + [ctypes.c_int64] * len(signature.size_args) + table


def c_arguments(signature: FunctionSignature, args: Sequence[Any]) -> list[Any]:
    """The C arguments for a call with `args`; ValueError naming the parameter at fault."""
    params = signature.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise ValueError(
            f"`{signature.name}` takes {len(params)} arguments ({names}), got {len(args)}"
        )
    sizes: dict[str, int] = {}
    values: list[Any] = [None] * len(params)
    for i, (param, arg) in enumerate(zip(params, args, strict=True)):
        if param.kind == "scalar":  # scalars first: they bind the sizes they name
            values[i] = _scalar(param, arg)
            if param.symbol is not None:
                sizes[param.symbol] = int(values[i])
    spans: list[tuple[ParamSpec, int, int]] = []
    for i, (param, arg) in enumerate(zip(params, args, strict=True)):
        if param.kind == "buffer":
            array = _array(param, arg, sizes)
            # The address read once (`.ctypes` builds a helper object at every use: a third of
            # a small model's call overhead).
            values[i] = address = array.__array_interface__["data"][0]
            if array.nbytes:
                spans.append((param, address, address + array.nbytes))
    _check_no_alias(signature.name, spans)
    return values + [sizes[name] for name in signature.size_args]


def _check_no_alias(function: str, spans: list[tuple[ParamSpec, int, int]]) -> None:
    """Refuse overlapping arrays (parameter, first byte, end) where one is written through a
    `restrict` pointer."""
    for i, (first, start, end) in enumerate(spans):
        for second, other_start, other_end in spans[i + 1 :]:
            restricted = first.restrict or second.restrict
            written = first.written or second.written
            if restricted and written and start < other_end and other_start < end:
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
                f"argument `{param.name}`: {arg} does not fit in {dtype} "
                f"([{info.min}, {info.max}])"
            )
        return int(arg)
    if not isinstance(arg, numbers.Real):
        raise ValueError(f"argument `{param.name}`: expected a {dtype} number, got {arg!r}")
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
    if array.dtype != _numpy_dtype(param.dtype):
        raise ValueError(
            f"argument `{param.name}`: expected dtype {param.dtype}, got {array.dtype}"
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
def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(name)


def _check_shape(param: ParamSpec, shape: tuple[int, ...], sizes: dict[str, int]) -> None:
    for want, got in zip(param.shape, shape, strict=True):
        if isinstance(want, str) and want not in sizes:
            sizes[want] = got
    expected = tuple(sizes[w] if isinstance(w, str) else w for w in param.shape)
    if expected == shape:
        return
    symbols = [f"{w} = {sizes[w]}" for w in param.shape if isinstance(w, str)]
    bound = f" (bound earlier: {', '.join(symbols)})" if symbols else ""
    raise ValueError(f"argument `{param.name}`: expected shape {expected}, got {shape}{bound}")
