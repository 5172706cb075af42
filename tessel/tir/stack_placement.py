"""Where an allocation lives: on the stack or in the runtime workspace (docs/architecture.md §6).

One rule, read by code generation (which emits the allocation) and by the memory report (which
counts it), so what the report says is what the C code does. As apache/tvm#9022 settled, a
scope names the property required, not the allocator: `global.stack` always uses the stack,
`global.workspace` always the workspace, and any other scope the stack exactly when its size
is a constant no larger than the target's `max_stack_alloca_size`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tessel.ir.expr import IntImm, PrimExpr
from tessel.ir.target import Target
from tessel.support.dtype import DataType
from tessel.tir.layout import extent_product
from tessel.tir.stmt import Allocate

STACK_SCOPE = "global.stack"
WORKSPACE_SCOPE = "global.workspace"
# The Allocate annotation LowerMemoryScopes records the decision in: "stack" or "workspace".
PLACEMENT = "placement"


def allocation_bytes(dtype: DataType, extents: Sequence[PrimExpr]) -> int | None:
    """The bytes an allocation of `extents` elements of `dtype` takes (every lane of a vector
    element counts); None when an extent is not a constant."""
    count = extent_product(extents)  # folds to an IntImm exactly when code generation sees one
    if not isinstance(count, IntImm):
        return None
    return int(count.value) * dtype.lanes * dtype.itemsize


def is_on_stack(scope: str, nbytes: int | None, target: Target) -> bool:
    """True if an allocation of `scope` and `nbytes` (None: a dynamic size) goes on the stack.

    A dynamic `global.stack` allocation answers True: it asks for the stack, and code
    generation reports that it cannot have it.
    """
    if scope == STACK_SCOPE:
        return True
    if scope == WORKSPACE_SCOPE or nbytes is None:
        return False
    return nbytes <= target.max_stack_alloca_size


def storage_scope(alloc: Allocate) -> str:
    """The memory scope of an allocation (its pointer's annotation; `global` by default)."""
    annotation = alloc.buffer_var.type_annotation
    return annotation.storage_scope if annotation is not None else "global"


def placement_of(alloc: Allocate, target: Target) -> str:
    """ "stack" or "workspace": what LowerMemoryScopes recorded on `alloc`, else the rule's
    answer for `target` (IR that did not go through the pipeline)."""
    recorded = alloc.annotations.get(PLACEMENT)
    if recorded in ("stack", "workspace"):
        return str(recorded)
    nbytes = allocation_bytes(alloc.dtype, alloc.extents)
    return "stack" if is_on_stack(storage_scope(alloc), nbytes, target) else "workspace"
