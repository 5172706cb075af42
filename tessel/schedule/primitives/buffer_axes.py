"""The index maps and graph-level steps of buffer_split, buffer_fuse and buffer_reorder.

Each step is one reshape / pad / transpose at the graph level (the TY-NNP thread), which
is what lets the caller follow the layout; as TensorIR it is one transform_layout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tessel.ir import builders
from tessel.ir.expr import FloatImm, IntImm, PrimExpr, Var
from tessel.schedule.errors import ScheduleError
from tessel.schedule.layout_steps import Step, fuse_steps, reorder_steps, split_steps
from tessel.tir.buffer import Buffer
from tessel.tir.index_map import IndexMap

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def _vars(buffer: Buffer) -> list[Var]:
    return [Var(f"i{k}", e.dtype) for k, e in enumerate(buffer.shape)]


def _extent(sch: Schedule, primitive: str, buffer: Buffer, position: int) -> int:
    extent = buffer.shape[position]
    if not isinstance(extent, IntImm):
        raise ScheduleError(
            primitive,
            "static-extent",
            f"axis {position} of `{buffer.name}` has the symbolic extent {extent}; "
            "buffer steps need constant extents",
            func=sch.func,
        )
    return extent.value


def split_map(
    sch: Schedule, buffer: Buffer, position: int, factors: Sequence[int | None]
) -> tuple[IndexMap, list[int]]:
    """The map splitting axis `position` into `factors` (one None inferred), and the factors."""
    extent = _extent(sch, "buffer_split", buffer, position)
    parts = _factors(sch, buffer, extent, factors)
    variables = _vars(buffer)
    index = variables[position]
    pieces: list[PrimExpr] = []
    for k in range(len(parts)):
        inner = math.prod(parts[k + 1 :])
        piece = index // inner if inner > 1 else index
        pieces.append(piece % parts[k] if k > 0 else piece)
    final = [*variables[:position], *pieces, *variables[position + 1 :]]
    return IndexMap(tuple(variables), tuple(final)), parts


def _factors(
    sch: Schedule, buffer: Buffer, extent: int, factors: Sequence[int | None]
) -> list[int]:
    unknown = [k for k, f in enumerate(factors) if f is None]
    known = [f for f in factors if f is not None]
    if len(factors) < 2 or len(unknown) > 1 or any(not isinstance(f, int) or f < 1 for f in known):
        raise ScheduleError(
            "buffer_split",
            "factors",
            f"factors must be two or more positive ints, at most one None; got "
            f"{list(factors)} for `{buffer.name}`",
            func=sch.func,
        )
    parts = [f if f is not None else -(-extent // math.prod(known)) for f in factors]
    if math.prod(parts) < extent:
        raise ScheduleError(
            "buffer_split",
            "factors-too-small",
            f"factors {parts} cover {math.prod(parts)} elements, fewer than the "
            f"axis extent {extent} of `{buffer.name}`",
            func=sch.func,
        )
    _check_outer_factor(sch, buffer, extent, parts)
    return parts


def _check_outer_factor(sch: Schedule, buffer: Buffer, extent: int, parts: list[int]) -> None:
    """Refuse an outermost factor past what the axis reaches (`[2, None]` on extent 1): the map
    `i // inner` gives the new buffer only `ceil(extent / inner)` rows, as TVM's transform_layout
    shapes a buffer by its index map, so the factor could not be the new axis's extent."""
    inner = math.prod(parts[1:])
    needed = -(-extent // inner)
    if parts[0] <= needed:
        return
    message = (
        f"the outermost factor {parts[0]} of {parts} exceeds the {needed} rows of {inner} "
        f"that axis extent {extent} of `{buffer.name}` fills; the rest is all padding"
    )
    hint = f"give {needed} as the outermost factor, or leave it None"
    raise ScheduleError("buffer_split", "factor-too-large", message, func=sch.func, hint=hint)


def split_record(
    buffer: Buffer, position: int, parts: list[int], pad_value: Any
) -> tuple[Step, ...]:
    """The graph-level steps of a split (pad, then reshape)."""
    return split_steps(_shape(buffer), position, parts, _pad_constant(pad_value))


def fuse_map(sch: Schedule, buffer: Buffer, positions: list[int]) -> IndexMap:
    """The map fusing the consecutive axes at `positions` into one."""
    extents = [_extent(sch, "buffer_fuse", buffer, p) for p in positions]
    variables = _vars(buffer)
    fused: PrimExpr = builders.const(0, variables[0].dtype)
    for p, extent in zip(positions, extents, strict=True):
        fused = fused * extent + variables[p]
    final = [*variables[: positions[0]], fused, *variables[positions[-1] + 1 :]]
    return IndexMap(tuple(variables), tuple(final))


def fuse_record(buffer: Buffer, positions: list[int]) -> tuple[Step, ...]:
    """The graph-level step of a fuse (a reshape)."""
    return fuse_steps(_shape(buffer), positions)


def reorder_permutation(ndim: int, positions: list[int]) -> list[int]:
    """The full permutation (new axis k takes old axis order[k]) that puts the axes at
    `positions`, in the given order, into the slots they occupy together."""
    order = list(range(ndim))
    for slot, source in zip(sorted(positions), positions, strict=True):
        order[slot] = source
    return order


def permute_map(buffer: Buffer, order: list[int]) -> IndexMap:
    """The map whose new axis k is old axis `order[k]`."""
    variables = _vars(buffer)
    return IndexMap(tuple(variables), tuple(variables[k] for k in order))


def reorder_record(buffer: Buffer, order: list[int]) -> tuple[Step, ...]:
    """The graph-level step of a reorder (a transpose)."""
    return reorder_steps(_shape(buffer), order)


def _shape(buffer: Buffer) -> tuple[int, ...]:
    return tuple(e.value if isinstance(e, IntImm) else -1 for e in buffer.shape)


def _pad_constant(pad_value: Any) -> int | float:
    if isinstance(pad_value, IntImm | FloatImm):
        return pad_value.value
    return pad_value if isinstance(pad_value, int | float) else 0
