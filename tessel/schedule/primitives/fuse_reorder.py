"""fuse (directly nested loops into one) and reorder (loops of one perfect nest)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import LoopRV
from tessel.schedule.state import replace_stmt
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def fuse(sch: Schedule, rvs: Sequence[LoopRV]) -> tuple[PrimFunc, Var]:
    """The function with the loops fused, and the fused loop's variable."""
    loops = [sch.loop(rv, "fuse") for rv in rvs]
    if len(loops) < 2:
        raise ScheduleError("fuse", "loop-count", "needs at least two loops", func=sch.func)
    for outer, inner in zip(loops, loops[1:]):
        if outer.body is not inner:
            between = "statements" if not isinstance(outer.body, For) else f"`{outer.body.loop_var.name}`"
            raise ScheduleError("fuse", "adjacent-nesting",
                                f"loops `{outer.loop_var.name}` and `{inner.loop_var.name}` are not "
                                f"directly nested ({between} lies between them)",
                                func=sch.func, culprits=(outer, inner))  # fmt: skip
    dtype = loops[0].loop_var.dtype
    fused = Var("_".join(loop.loop_var.name for loop in loops) + "_fused", dtype)
    mapping: dict[Var, PrimExpr] = {}
    stride: PrimExpr = builders.const(1, dtype)
    for position, loop in reversed(list(enumerate(loops))):
        digit = builders.floordiv(fused, stride)
        if position:
            digit = builders.floormod(digit, loop.extent)
        mapping[loop.loop_var] = builders.add(loop.min, digit)
        stride = builders.mul(stride, loop.extent)
    body = substitute(loops[-1].body, mapping)
    new_loop = For(fused, builders.const(0, dtype), stride, ForKind.SERIAL, body)
    return replace_stmt(sch.func, loops[0], new_loop), fused


def reorder(sch: Schedule, rvs: Sequence[LoopRV]) -> PrimFunc:
    """The function with the given loops, which lie on one perfect nest, in the given order."""
    loops = [sch.loop(rv, "reorder") for rv in rvs]
    if len({id(loop) for loop in loops}) != len(loops):
        raise ScheduleError("reorder", "duplicate", "a loop is given twice", func=sch.func, culprits=loops)
    nest = _perfect_nest(sch, loops)
    chosen = {id(loop) for loop in loops}
    order = iter(loops)
    headers = [next(order) if id(loop) in chosen else loop for loop in nest]
    body = nest[-1].body
    for header in reversed(headers):
        body = with_changes(header, body=body)
    return replace_stmt(sch.func, nest[0], body)


def _perfect_nest(sch: Schedule, loops: list[For]) -> list[For]:
    """The loops from the outermost to the innermost given one; each must be the only body."""
    chosen = {id(loop) for loop in loops}
    for start in loops:
        nest = [start]
        while not chosen <= {id(n) for n in nest} and isinstance(nest[-1].body, For):
            nest.append(nest[-1].body)
        if chosen <= {id(n) for n in nest}:
            return nest
    raise ScheduleError("reorder", "not-a-nest",
                        "the loops are not all on one perfect nest (each loop's body the next loop)",
                        func=sch.func, culprits=loops)  # fmt: skip

