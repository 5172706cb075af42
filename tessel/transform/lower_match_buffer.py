"""LowerMatchBuffer: a block's match_buffers become `DeclBuffer` views of the matched regions
(the role of TVM's LowerMatchBuffer).

A matched buffer shares the source buffer's data: the view's `elem_offset` is the source's
plus the region's start times the source's strides, its strides are the source's innermost
ones, and the variables the match_buffer declares for its shape, strides or offset are bound to
the region's actual values. Every use of the matched buffer in the block then uses the view.
The view must cover the region exactly (leading extent-1 dimensions may be dropped); anything
else is a LoweringError, since no view can share the data then.

The block stays (without match_buffers), and the view is declared at the start of its body,
where the region's expressions are in scope. Run after CompactBufferAllocation: a view reads its
source through the source's data pointer, which compaction does not see, so the source must
not be reshaped after this pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NoReturn

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir.analysis.interval import constant_extent
from tessel.tir.block import Block, MatchBufferRegion
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import DeclBuffer, Stmt
from tessel.transform.buffer_layout import buffer_strides
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class LowerMatchBuffer(PrimFuncPass):
    """Declare every match_buffer as a view sharing its source region's data."""

    name: ClassVar[str] = "lower_match_buffer"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_MatchLowerer().visit(func.body))


class _MatchLowerer(Mutator):
    def visit_Block(self, block: Block) -> Node:
        visited = self.generic_visit(block)
        assert isinstance(visited, Block)
        if not visited.match_buffers:
            return visited
        body = visited.body
        for match in reversed(visited.match_buffers):
            body = _bind_match_buffer(match, body)
        return with_changes(visited, body=body, match_buffers=())


def _bind_match_buffer(match: MatchBufferRegion, body: Stmt) -> Stmt:
    """Declare `match.buffer` as a view of its source region, and use the view in `body`."""
    declared, source = match.buffer, match.source
    source_strides = buffer_strides(source.buffer)
    rank, source_rank = len(declared.shape), len(source_strides)
    if rank > source_rank:
        raise LoweringError(
            f"match_buffer `{declared.name}` has {rank} dimensions but its source region of "
            f"`{source.buffer.name}` has only {source_rank}",
            rule="lower_match_buffer.match-buffer-rank",
        )
    _check_match_shape(match)
    offset = source.buffer.elem_offset
    for region, stride in zip(source.region, source_strides, strict=True):
        offset = offset + region.min * stride
    strides = source_strides[source_rank - rank :]
    extents = tuple(r.extent for r in source.region[source_rank - rank :])
    symbols = _symbolic_bindings(declared, strides, offset, extents)
    view = Buffer(
        source.buffer.data,
        declared.dtype,
        tuple(substitute(e, symbols) for e in declared.shape),
        declared.name,
        strides,
        offset,
        declared.axis_separators,
        declared.data_alignment,
        declared.offset_factor,
    )
    replaced = _BufferReplacer({declared: view}).visit(body)
    assert isinstance(replaced, Stmt)
    return DeclBuffer(view, substitute(replaced, symbols))


def _check_match_shape(match: MatchBufferRegion) -> None:
    """The view must cover its region exactly: the leading dimensions it drops have extent 1,
    and each of its constant extents equals the region's extent there (a symbolic extent is
    bound to the region's, see `_symbolic_bindings`)."""
    declared, region = match.buffer, match.source.region
    dropped = len(region) - len(declared.shape)
    for axis, rng in enumerate(region[:dropped]):
        extent = constant_extent(rng.extent)
        if extent is not None and extent != 1:
            problem = f"drops dimension {axis} of the region, whose extent is {extent}, not 1"
            _raise_match_shape(match, problem)
    for axis, (want, rng) in enumerate(zip(declared.shape, region[dropped:], strict=True)):
        extent = constant_extent(rng.extent)
        if isinstance(want, IntImm) and extent is not None and want.value != extent:
            problem = (
                f"has extent {want.value} in dimension {axis}, but the region's extent there "
                f"is {extent}"
            )
            _raise_match_shape(match, problem)


def _raise_match_shape(match: MatchBufferRegion, problem: str) -> NoReturn:
    shape = ", ".join(str(e) for e in match.buffer.shape)
    extents = ", ".join(_extent_text(r.extent) for r in match.source.region)
    raise LoweringError(
        f"match_buffer `{match.buffer.name}` (shape [{shape}]) {problem}; the region of "
        f"`{match.source.buffer.name}` has extents [{extents}]",
        rule="lower_match_buffer.match-buffer-shape",
        hint="give the matched buffer the region's shape (leading extent-1 dimensions may be "
        "left out)",
    )


def _extent_text(extent: PrimExpr) -> str:
    value = constant_extent(extent)
    return str(extent) if value is None else str(value)


def _symbolic_bindings(
    declared: Buffer,
    strides: tuple[PrimExpr, ...],
    offset: PrimExpr,
    extents: tuple[PrimExpr, ...],
) -> dict[Var, PrimExpr]:
    """Values for the variables a match_buffer declares for its strides, offset and shape."""
    symbols: dict[Var, PrimExpr] = {}
    pairs = [(declared.elem_offset, offset), *zip(declared.shape, extents, strict=True)]
    if declared.strides:
        pairs += list(zip(declared.strides, strides, strict=True))
    for declared_value, actual in pairs:
        if isinstance(declared_value, Var) and declared_value not in symbols:
            symbols[declared_value] = builders.cast(actual, declared_value.dtype)
    return symbols


class _BufferReplacer(Mutator):
    """Replace buffers (by identity) everywhere they are used."""

    def __init__(self, mapping: dict[Buffer, Buffer]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Buffer(self, buffer: Buffer) -> Node:
        return self.mapping.get(buffer) or self.visit_memoized(buffer)
