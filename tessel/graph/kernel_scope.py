"""A planned memory scope reaching TensorIR (issue 27, build item 6): the buffers a kernel takes
are declared in the memory scope device planning gave its arguments and results, so the PrimFunc
says where its data lives ("global.workspace", "global.stack", ...), as TVM's LowerTE writes a
parameter's VirtualDevice into its buffer. Only the parameters change: the kernel's own
allocations keep the scopes TensorIR's rules give them."""

from __future__ import annotations

from tessel.ir.expr import Var
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.ir.type import PointerType
from tessel.schedule.primitives.cache_stage import BufferReplacer
from tessel.support.dtype import handle
from tessel.support.frozen_map import FrozenMap
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc


def with_param_scope(func: PrimFunc, scope: str) -> PrimFunc:
    """`func` with every parameter buffer in memory scope `scope` (the same object when they
    already are)."""
    renamed: dict[Buffer, Buffer] = {}
    for buffer in func.param_buffers():
        if buffer.scope == scope:
            continue
        data = Var(buffer.data.name, handle, PointerType(buffer.dtype, scope))
        renamed[buffer] = with_changes(buffer, data=data)
    if not renamed:
        return func
    body = BufferReplacer(renamed).visit(func.body)
    body = substitute(body, {old.data: new.data for old, new in renamed.items()})
    buffer_map = FrozenMap({p: renamed.get(b, b) for p, b in func.buffer_map.items()})
    return with_changes(func, body=body, buffer_map=buffer_map)


__all__ = ["with_param_scope"]
