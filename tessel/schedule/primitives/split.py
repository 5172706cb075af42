"""split: one loop into nested loops whose extents multiply to (at least) the original."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.state import replace_in, replace_stmt, walk_with_ancestors
from tessel.tir.block import BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def split(sch: Schedule, rv: LoopRV, factors: list[int | None]) -> tuple[PrimFunc, list[Var]]:
    """The function with `rv` split by `factors`, and the new loop variables (outermost first)."""
    loop = sch.loop(rv, "split")
    extents = _extents(sch, loop, factors)
    var = loop.loop_var
    new_vars = [Var(f"{var.name}_{k}", var.dtype) for k in range(len(extents))]
    fused = _binding(new_vars, extents)
    body = substitute(loop.body, {var: builders.add(loop.min, fused)})
    total = math.prod(extents) if all(isinstance(e, int) for e in extents) else None
    if not (isinstance(loop.extent, IntImm) and total == loop.extent.value):
        # TVM's predicate keeps the nested form the substitution starts from, `(i_0 * 2 + i_1) *
        # 3 + i_2 < n`, while the binding is simplified to `i_0 * 6 + i_1 * 3 + i_2`.
        nested = _nested(new_vars, extents)
        body = _predicate_blocks(sch, loop, body, builders.lt(nested, loop.extent))
    for new_var, extent in reversed(list(zip(new_vars, extents, strict=True))):
        body = For(
            new_var,
            builders.const(0, var.dtype),
            builders.const(extent, var.dtype) if isinstance(extent, int) else extent,
            ForKind.SERIAL,
            body,
        )
    outer = with_changes(
        body, kind=loop.kind, annotations=loop.annotations
    )  # the outer loop keeps them
    return replace_stmt(sch.func, loop, outer), new_vars


def _extents(sch: Schedule, loop: For, factors: list[int | None]) -> list[int | PrimExpr]:
    def fail(rule: str, message: str) -> ScheduleError:
        return ScheduleError("split", rule, message, func=sch.func, culprits=(loop,))

    if len(factors) < 2:
        raise fail("factor-count", f"needs at least two factors, got {factors}")
    missing = [k for k, f in enumerate(factors) if f is None]
    if len(missing) > 1:
        raise fail("one-inferred", f"at most one factor may be None, got {factors}")
    if any(f is not None and (not isinstance(f, int) or f <= 0) for f in factors):
        raise fail("positive-factors", f"factors must be positive integers or None, got {factors}")
    known = math.prod(f for f in factors if f is not None)
    if not missing:
        return list(factors)  # type: ignore[arg-type]  # no None left
    if isinstance(loop.extent, IntImm):
        inferred: int | PrimExpr = -(-loop.extent.value // known)
    else:
        inferred = builders.floordiv(builders.add(loop.extent, known - 1), known)
    return [inferred if f is None else f for f in factors]


def _binding(new_vars: list[Var], extents: list[int | PrimExpr]) -> PrimExpr:
    """TVM's form of the original variable in the bindings: `i_0 * 6 + i_1 * 3 + i_2` (each new
    variable times the product of the extents inside it), not the nested form of the predicate."""
    fused: PrimExpr | None = None
    for k, new_var in enumerate(new_vars):
        stride: int | PrimExpr = 1
        for extent in extents[k + 1 :]:
            both_int = isinstance(stride, int) and isinstance(extent, int)
            stride = stride * extent if both_int else builders.mul(stride, extent)
        term = new_var if isinstance(stride, int) and stride == 1 else builders.mul(new_var, stride)
        fused = term if fused is None else builders.add(fused, term)
    assert fused is not None
    return fused


def _nested(new_vars: list[Var], extents: list[int | PrimExpr]) -> PrimExpr:
    """`(i_0 * e_1 + i_1) * e_2 + i_2`: the original variable in Horner form."""
    nested: PrimExpr = new_vars[0]
    for new_var, extent in zip(new_vars[1:], extents[1:], strict=True):
        nested = builders.add(builders.mul(nested, extent), new_var)
    return nested


def _predicate_blocks(sch: Schedule, loop: For, body: Stmt, in_range: PrimExpr) -> Stmt:
    """Add `in_range` to the predicate of every block directly under the split loop."""
    realizes = [
        n
        for n, anc in walk_with_ancestors(body)
        if isinstance(n, BlockRealize) and not any(isinstance(a, BlockRealize) for a in anc)
    ]
    if not realizes:
        raise ScheduleError(
            "split",
            "predicate-needs-block",
            f"the factors do not divide the extent {loop.extent} of "
            f"`{loop.loop_var.name}`, and there is no block to guard the extra iterations",
            func=sch.func,
            culprits=(loop,),
        )
    for realize in realizes:
        guarded = with_changes(realize, predicate=builders.logical_and(realize.predicate, in_range))
        body = replace_in(body, realize, guarded)
    return body
