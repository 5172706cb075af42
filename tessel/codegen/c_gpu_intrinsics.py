"""GPU intrinsics in a C build: TVM's tensor-core, PTX and warp calls (tessel.tir.gpu_builtin)
have no CPU meaning, so a module calling one is refused before any C is written, naming it."""

from __future__ import annotations

from tessel.codegen.errors import CodegenError
from tessel.ir.expr import Call
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.tir.function import PrimFunc
from tessel.tir.gpu_builtin import is_gpu_intrinsic


def refuse_gpu_intrinsics(mod: IRModule) -> None:
    """Raise a CodegenError naming the first GPU intrinsic a function of `mod` calls."""
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            continue
        for node in post_order(func.body):
            if isinstance(node, Call) and is_gpu_intrinsic(node.op):
                name = node.op.name.removeprefix("tir.")
                raise CodegenError(
                    f"`T.{name}` in `{gv.name_hint}` is a GPU intrinsic with no CPU meaning; "
                    "the C backend cannot build it",
                    rule="codegen.gpu-intrinsic",
                    hint="build this function for a GPU target with TVM, or rewrite it with "
                    "loops over buffers",
                )
