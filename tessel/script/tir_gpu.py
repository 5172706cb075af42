"""The GPU side of the `T` namespace: tensor-core and PTX intrinsics (`T.ptx_mma`,
`T.tvm_fill_fragment`, ...), `T.tvm_thread_allreduce` with its `T.comm_reducer`, and
`T.reinterpret`. They parse and print as in TVM; the C backend refuses the GPU ones by name.

TVM scripts pass the result dtype either first (`T.ptx_mma("float32", "m16n8k16", ...)`, as
TVM prints it) or as the `dtype=` keyword (`T.ptx_mma("m16n8k16", ..., dtype="float32")`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.script.errors import ArgumentError
from tessel.script.parser import intents
from tessel.tir import builtin, gpu_builtin
from tessel.tir.reduce_expr import CommReducer


def _dtype_first(name: str) -> Callable[..., PrimExpr]:
    def call(*args: Any, dtype: Any = None) -> PrimExpr:
        """The intrinsic called with `args`, returning `dtype`."""
        if dtype is not None:
            return gpu_builtin.gpu_call(name, intents.dtype_arg(dtype, "dtype"), args)
        if not args:
            raise ArgumentError(f"T.{name} needs its result dtype first", 0)
        try:
            element = intents.dtype_arg(args[0], 0)
        except ArgumentError as err:
            raise ArgumentError(
                f"T.{name} takes its result dtype first: {err.message}",
                0,
                hint=f'write T.{name}("float32", ...) or T.{name}(..., dtype="float32")',
            ) from err
        return gpu_builtin.gpu_call(name, element, args[1:])

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"TVM's GPU intrinsic {name} (dtype first, or dtype=...): no CPU meaning."
    return call


def _handle_call(name: str) -> Callable[..., PrimExpr]:
    def call(*args: Any, dtype: Any = None) -> PrimExpr:
        """The intrinsic called with `args`."""
        element = (
            gpu_builtin.default_dtype(name, args)
            if dtype is None
            else intents.dtype_arg(dtype, "dtype")
        )
        return gpu_builtin.gpu_call(name, element, args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"TVM's GPU intrinsic {name} (dtype as TVM infers it): no CPU meaning."
    return call


GPU_FUNCTIONS: dict[str, Callable[..., PrimExpr]] = {
    **{name: _dtype_first(name) for name in gpu_builtin.DTYPE_FIRST_NAMES},
    **{name: _handle_call(name) for name in gpu_builtin.HANDLE_NAMES},
}


def comm_reducer(combiner: Any, identity: Any) -> CommReducer:
    """`T.comm_reducer(lambda x, y: x + y, [T.float32(0)])`: a reducer of len(identity) values;
    `combiner` takes the left values then the right ones (`lambda x0, x1, y0, y1: (.., ..)`)."""
    if not isinstance(identity, list | tuple) or not identity:
        raise ArgumentError("T.comm_reducer expects a non-empty list of identity values", 1)
    if not callable(combiner):
        raise ArgumentError("T.comm_reducer expects a lambda combining two values", 0)
    identities = tuple(builders.convert(v) for v in identity)
    count = len(identities)
    names = getattr(combiner, "parameter_names", None)
    if names is None or len(names) != 2 * count:
        raise ArgumentError(
            f"T.comm_reducer: the combiner must take {2 * count} parameters "
            f"(the {count} left values, then the {count} right ones)",
            0,
        )
    lhs = tuple(Var(n, v.dtype) for n, v in zip(names[:count], identities, strict=True))
    rhs = tuple(Var(n, v.dtype) for n, v in zip(names[count:], identities, strict=True))
    result = combiner(*lhs, *rhs)
    results = tuple(result) if isinstance(result, list | tuple) else (result,)
    if len(results) != count:
        raise ArgumentError(
            f"T.comm_reducer: the combiner gives {len(results)} values, expected {count}", 0
        )
    converted = tuple(builders.convert(r) for r in results)
    return CommReducer(lhs, rhs, converted, identities)


def reinterpret(*args: Any, dtype: Any = None) -> PrimExpr:
    """The bits of a value as another dtype: `T.reinterpret("handle", x)` (TVM's printed form)
    or `T.reinterpret(x, dtype="handle")`."""
    if dtype is None:
        if len(args) != 2:
            raise ArgumentError("T.reinterpret takes a dtype and a value", 0)
        dtype, value = args
    elif len(args) == 1:
        value = args[0]
    else:
        raise ArgumentError("T.reinterpret(value, dtype=...) takes one value", 0)
    return builtin.reinterpret(intents.dtype_arg(dtype, "dtype"), value)
