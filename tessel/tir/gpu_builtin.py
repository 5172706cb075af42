"""GPU intrinsics that TVM scripts call (tensor cores, PTX, warp reductions): ops with TVM's
names, kept as calls so that such scripts parse and print. They have no CPU meaning: the C
backend refuses them by name.

`DTYPE_FIRST` ops take their result dtype as the first argument in TVM's printed form
(`T.ptx_mma("float32", "m16n8k16", ...)`); the others are `handle` calls printed with their
arguments only (`T.tvm_fill_fragment(C.data, 16, 16, 16, 0, T.float32(0))`).
"""

from __future__ import annotations

from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Call, Op, PrimExpr, StringImm
from tessel.support.dtype import DataType

DTYPE_FIRST_NAMES = (
    "ptx_mma", "ptx_mma_sp", "ptx_ldmatrix", "ptx_cp_async", "ptx_cp_async_bulk", "mma_store",
    "mma_fill",
)  # fmt: skip
HANDLE_NAMES = (
    "tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_mma_sync", "tvm_bmma_sync",
    "tvm_store_matrix_sync", "ptx_commit_group", "ptx_wait_group", "ptx_cp_async_barrier",
    "ptx_init_barrier_thread_count", "ptx_arrive_barrier", "ptx_arrive_barrier_expect_tx",
    "ptx_wait_barrier", "tvm_thread_allreduce", "tvm_warp_shuffle", "tvm_warp_shuffle_up",
    "tvm_warp_shuffle_down", "tvm_warp_activemask", "tvm_storage_sync", "tvm_thread_invariant",
)  # fmt: skip

GPU_OPS: dict[str, Op] = {name: Op(f"tir.{name}") for name in (*DTYPE_FIRST_NAMES, *HANDLE_NAMES)}
DTYPE_FIRST_OPS = frozenset(GPU_OPS[name] for name in DTYPE_FIRST_NAMES)
thread_allreduce_op = GPU_OPS["tvm_thread_allreduce"]


def gpu_call(name: str, dtype: DataType | str, args: tuple[Any, ...]) -> PrimExpr:
    """A call of the GPU intrinsic `name` (e.g. "ptx_mma") returning `dtype`; Python strings
    become StringImm arguments (layouts, shapes, PTX types)."""
    return Call(DataType.of(dtype), GPU_OPS[name], tuple(_argument(a) for a in args))


# Handle-group ops whose result is not a handle: the dtype of one argument (the value a warp
# shuffle moves, the condition marked thread-invariant), or a fixed dtype.
_VALUE_ARGUMENT = {
    "tvm_warp_shuffle": 1, "tvm_warp_shuffle_up": 1, "tvm_warp_shuffle_down": 1,
    "tvm_thread_invariant": 0,
}  # fmt: skip
_FIXED_DTYPE = {"tvm_warp_activemask": DataType.of("uint32")}


def default_dtype(name: str, args: tuple[Any, ...]) -> DataType:
    """The result dtype of a handle-group intrinsic called without `dtype=` (as TVM infers it)."""
    if name in _FIXED_DTYPE:
        return _FIXED_DTYPE[name]
    index = _VALUE_ARGUMENT.get(name)
    if index is not None and index < len(args):
        return _argument(args[index]).dtype
    return DataType.of("handle")


def is_gpu_intrinsic(op: Any) -> bool:
    """True for the op of a GPU intrinsic (which has no CPU meaning)."""
    return isinstance(op, Op) and GPU_OPS.get(op.name.removeprefix("tir.")) is op


def _argument(value: Any) -> PrimExpr:
    return StringImm(value) if isinstance(value, str) else builders.convert(value)
