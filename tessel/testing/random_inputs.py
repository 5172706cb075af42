"""Random arguments for a PrimFunc's parameters, for differential tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tessel.arith.dims import evaluate_dim
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.support.dtype import DataType
from tessel.tir.function import PrimFunc


def _extent(expr: PrimExpr, sizes: Mapping[str, int]) -> int:
    if isinstance(expr, IntImm):
        return int(expr.value)
    if isinstance(expr, Var) and expr.name in sizes:
        return int(sizes[expr.name])
    variables = {id(n): n for n in post_order(expr) if isinstance(n, Var)}
    if variables and all(v.name in sizes for v in variables.values()):
        # An extent over the sizes (n * 4 of a symbolic reshape): what it is at them.
        return evaluate_dim(expr, {v: int(sizes[v.name]) for v in variables.values()})
    raise ValueError(
        f"cannot make a random argument: extent `{expr}` is symbolic; pass shape_vars={{...}}"
    )


def random_array(shape: tuple[int, ...], dtype: DataType, rng: np.random.Generator) -> np.ndarray:
    """Small random values of `dtype`: floats in [-1, 1), signed ints in [-8, 8), uints in
    [0, 16)."""
    if dtype.is_float:
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype.numpy)
    if dtype.is_bool:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    low = 0 if dtype.is_uint else -8
    return rng.integers(low, low + 16, size=shape).astype(dtype.numpy)


def random_arguments(
    func: PrimFunc,
    rng: np.random.Generator,
    shape_vars: Mapping[str, int] | None = None,
    scalars: Mapping[str, Any] | None = None,
) -> list[Any]:
    """One argument per parameter: random arrays for buffers, given or random scalars."""
    sizes = dict(shape_vars or {})
    scalars = dict(scalars or {})
    args: list[Any] = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is not None:
            shape = tuple(_extent(e, sizes) for e in buffer.shape)
            args.append(random_array(shape, buffer.dtype, rng))
        elif param.name in scalars:
            args.append(scalars[param.name])
        elif param.name in sizes:
            args.append(sizes[param.name])
        else:
            args.append(random_array((), param.dtype, rng).item())
    return args
