"""LowerBlocks: turn blocks into plain loop-nest code (TVM's LowerOpaqueBlock + LowerInitBlock).

After this pass no `Block` or `BlockRealize` remains:
- block iterators are replaced by the values the `BlockRealize` binds them to;
- `T.init()` runs when every reduction iterator is at the start of its domain;
- a `T.where` predicate becomes an `IfThenElse` around the block's code;
- `alloc_buffers` become `Allocate` + `DeclBuffer` where the block was (the root block's
  buffers thereby live for the whole function);
- `match_buffers` become `DeclBuffer` views that share the matched region's data, with the
  region's offset folded into `elem_offset` and the source's strides.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import ClassVar, NoReturn

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.support.dtype import bool_
from tessel.tir.analysis.interval import constant_extent
from tessel.tir.block import Block, BlockRealize, IterVarType, MatchBufferRegion
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Allocate, DeclBuffer, IfThenElse, SeqStmt, Stmt
from tessel.transform.buffer_layout import buffer_strides, flat_extent
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass

_TRUE = builders.const(True, bool_)


@dataclass(frozen=True)
class LowerBlocks(PrimFuncPass):
    """Replace every block by the loop-level code it stands for."""

    name: ClassVar[str] = "lower_blocks"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_BlockLowerer().visit(func.body))


class _BlockLowerer(Mutator):
    def visit_BlockRealize(self, realize: BlockRealize) -> Stmt:
        block = realize.block
        body = self._block_code(block)
        bindings = {
            iv.var: self.visit(value)
            for iv, value in zip(block.iter_vars, realize.iter_values, strict=True)
        }
        body = substitute(body, bindings)
        if builders.is_const_int(realize.predicate, 1):
            return body
        return IfThenElse(self.visit(realize.predicate), body)

    def visit_Block(self, block: Block) -> Stmt:
        # A block without BlockRealize (a bare root block) has nothing to bind.
        if block.iter_vars:
            raise LoweringError(
                f"block `{block.name_hint}` has iterators but no BlockRealize binding them",
                rule="lower_blocks.unbound-iterators",
                hint="wrap the block in a BlockRealize that gives each iterator a value",
            )
        return self._block_code(block)

    def _block_code(self, block: Block) -> Stmt:
        """The block's body with its init, match_buffers and alloc_buffers, still using its
        iterator variables (the caller substitutes them)."""
        body = self.visit(block.body)
        if block.init is not None:
            body = SeqStmt.flatten([_guarded_init(block, self.visit(block.init)), body])
        for match in reversed(block.match_buffers):
            body = _bind_match_buffer(match, body)
        for buffer in reversed(block.alloc_buffers):
            declared = DeclBuffer(buffer, body)
            body = Allocate(buffer.data, buffer.dtype, _extents(buffer), _TRUE, declared)
        return body


def _extents(buffer: Buffer) -> tuple[PrimExpr, ...]:
    """What to allocate for an alloc_buffer: every element it reaches past its data pointer,
    its elem_offset and strides included."""
    return (flat_extent(buffer),)


def _guarded_init(block: Block, init: Stmt) -> Stmt:
    """`init` run only on the first iteration of every reduction iterator."""
    firsts = [
        builders.eq(iv.var, iv.dom.min)
        for iv in block.iter_vars
        if iv.iter_type is IterVarType.COMM_REDUCE
    ]
    if not firsts:
        return init
    return IfThenElse(reduce(builders.logical_and, firsts), init)


def _bind_match_buffer(match: MatchBufferRegion, body: Stmt) -> Stmt:
    """Declare `match.buffer` as a view of its source region, and use the view in `body`."""
    declared, source = match.buffer, match.source
    source_strides = buffer_strides(source.buffer)
    rank, source_rank = len(declared.shape), len(source_strides)
    if rank > source_rank:
        raise LoweringError(
            f"match_buffer `{declared.name}` has {rank} dimensions but its source region of "
            f"`{source.buffer.name}` has only {source_rank}",
            rule="lower_blocks.match-buffer-rank",
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
    body = substitute(_BufferReplacer({declared: view}).visit(body), symbols)
    return DeclBuffer(view, body)


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
        rule="lower_blocks.match-buffer-shape",
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
