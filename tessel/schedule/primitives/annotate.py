"""Loop kinds (parallel, vectorize, unroll, bind) and annotations on loops and blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.ir.expr import Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.state import replace_stmt, walk_with_ancestors
from tessel.support.frozen_map import FrozenMap, freeze
from tessel.tir.block import BlockRealize, IterVarType
from tessel.tir.function import PrimFunc
from tessel.tir.loop_annotations import MAX_VECTOR_LENGTH, VECTOR_LENGTH
from tessel.tir.stmt import For, ForKind

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule

# `vectorize` has its own primitive below (it also takes a vector length).
_KINDS = {"parallel": ForKind.PARALLEL, "unroll": ForKind.UNROLLED, "bind": ForKind.THREAD_BINDING}


def set_kind(sch: Schedule, primitive: str, rv: LoopRV, thread_axis: str | None = None) -> PrimFunc:
    """The function with `rv`'s loop kind set; parallel and bind refuse reduction loops."""
    loop = sch.loop(rv, primitive)
    if primitive in ("parallel", "bind"):
        _check_data_parallel(sch, primitive, loop)
    if primitive == "bind" and not thread_axis:
        raise ScheduleError(
            "bind",
            "thread-axis",
            "needs a thread axis name such as `threadIdx.x`",
            func=sch.func,
            culprits=(loop,),
        )
    new = with_changes(loop, kind=_KINDS[primitive], thread_binding=thread_axis)
    return replace_stmt(sch.func, loop, new)


def vectorize(sch: Schedule, rv: LoopRV, vector_length: int | None) -> PrimFunc:
    """The function with `rv`'s loop vectorized, in chunks of `vector_length` iterations when
    given (recorded as the loop's `vector_length` annotation; None removes it)."""
    loop = sch.loop(rv, "vectorize")
    if vector_length is not None:
        _check_vector_length(sch, loop, vector_length)
    _check_data_parallel(sch, "vectorize", loop)
    annotations = {k: v for k, v in loop.annotations.items() if k != VECTOR_LENGTH}
    if vector_length is not None:
        annotations[VECTOR_LENGTH] = vector_length
    new = with_changes(loop, kind=ForKind.VECTORIZED, annotations=FrozenMap(annotations))
    return replace_stmt(sch.func, loop, new)


def _check_vector_length(sch: Schedule, loop: For, vector_length: object) -> None:
    """A lane count C vectors can have: an int from 2 to 64. Not a power of two is allowed
    (each chunk is padded to the next power of two, its extra lanes masked)."""
    if (
        isinstance(vector_length, int)
        and not isinstance(vector_length, bool)  # True is an int to Python, not a lane count
        and 2 <= vector_length <= MAX_VECTOR_LENGTH
    ):
        return
    raise ScheduleError(
        "vectorize",
        "vector-length",
        f"vector_length must be an int from 2 to {MAX_VECTOR_LENGTH}, got "
        f"{vector_length!r} for loop `{loop.loop_var.name}`",
        func=sch.func,
        culprits=(loop,),
        hint="powers of two fill vector registers; leave it out for the target's width",
    )


def _check_data_parallel(sch: Schedule, primitive: str, loop: For) -> None:
    """Every block under `loop` binds the loop only to data-parallel block iterators."""
    for node, _ in walk_with_ancestors(loop.body):
        if not isinstance(node, BlockRealize):
            continue
        for iter_var, value in zip(node.block.iter_vars, node.iter_values, strict=True):
            if iter_var.iter_type is IterVarType.DATA_PAR or not _mentions(value, loop.loop_var):
                continue
            raise ScheduleError(
                primitive,
                "data-parallel",
                f"loop `{loop.loop_var.name}` is bound to the reduction iterator "
                f"`{iter_var.var.name}` of block `{node.block.name_hint}`; iterations "
                "of a reduction depend on each other",
                func=sch.func,
                culprits=(loop, node.block),
            )


def _mentions(expr: Any, var: Var) -> bool:
    return any(n is var for n in post_order(expr))


def annotate(
    sch: Schedule, target: LoopRV | BlockRV, key: str, value: Any, remove: bool = False
) -> PrimFunc:
    """The function with annotation `key` set to `value` (or removed) on a loop or block."""
    primitive = "unannotate" if remove else "annotate"
    if isinstance(target, LoopRV):
        node: Any = sch.loop(target, primitive)
    else:
        node = sch.block(target, primitive).block
    annotations = dict(node.annotations)
    if remove:
        if key not in annotations:
            raise ScheduleError(
                "unannotate",
                "no-such-key",
                f"no annotation `{key}` to remove",
                func=sch.func,
                culprits=(node,),
            )
        del annotations[key]
    else:
        annotations[key] = freeze(value)
    return replace_stmt(sch.func, node, with_changes(node, annotations=FrozenMap(annotations)))
