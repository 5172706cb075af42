"""LowerMemoryScopes: decide, in the IR, where each allocation lives (docs/architecture.md §6).

A memory scope names the property required, not the allocator. This pass applies the one rule
of `tir.stack_placement` for the target (`global` on the stack up to `max_stack_alloca_size`
bytes of constant size, `global.stack` always on the stack, `global.workspace` always in the
runtime workspace) and records the answer on each `Allocate` as the annotation `placement`
("stack" or "workspace"), so the lowered IR shows it and code generation reads it instead of
deciding again. A `global.stack` allocation of dynamic size is refused here, naming the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.target import Target
from tessel.ir.transform import PassContext
from tessel.support.frozen_map import FrozenMap
from tessel.tir.function import PrimFunc
from tessel.tir.stack_placement import (
    PLACEMENT,
    STACK_SCOPE,
    allocation_bytes,
    is_on_stack,
    storage_scope,
)
from tessel.tir.stmt import Allocate
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class LowerMemoryScopes(PrimFuncPass):
    """Annotate every Allocate with its placement for `target` ("stack" or "workspace")."""

    name: ClassVar[str] = "lower_memory_scopes"
    target: Target = Target()

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Placer(self.target).visit(func.body))


class _Placer(Mutator):
    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def visit_Allocate(self, alloc: Allocate) -> Node:
        body = self.visit(alloc.body)
        scope, nbytes = storage_scope(alloc), allocation_bytes(alloc.dtype, alloc.extents)
        if scope == STACK_SCOPE and nbytes is None:
            raise LoweringError(
                f"`{alloc.buffer_var.name}` is in scope global.stack but its size "
                f"{[str(e) for e in alloc.extents]} is not a constant; the stack takes "
                "constant sizes only",
                rule="lower_memory_scopes.dynamic-stack",
                hint="use scope global.workspace (or global) for a buffer of dynamic size",
            )
        placement = "stack" if is_on_stack(scope, nbytes, self.target) else "workspace"
        if alloc.annotations.get(PLACEMENT) == placement and body is alloc.body:
            return alloc
        annotations = FrozenMap({**alloc.annotations, PLACEMENT: placement})
        return with_changes(alloc, annotations=annotations, body=body)
